// Package recordauth authenticates records a process stores at rest in a
// place it does not alone control (a JetStream bucket), with a key that
// never travels over NATS.
//
// Each store has its own Key, derived from the frame key a host and its
// workers share (protocol.SessionKey, provisioned from a file or the
// environment) with HKDF-SHA256 and the store's label, so a tag made for
// one store never verifies in another and the frame key itself never
// signs a record.
//
//	k, _ := recordauth.Derive(frameKey, recordauth.StoreSessions)
//	data := k.Seal("s.s-h1-0123456789ab-1", body)
//	body, err := k.Open("s.s-h1-0123456789ab-1", data)
//
// A sealed record is the text "sfr1." + base64url(tag) + "." + body; the
// tag is HMAC-SHA256 over the record's storage key and its body, so a
// record copied under another key does not verify either. Open refuses a
// record without the prefix (ErrUnsigned: written before records were
// sealed, or by a writer without the key) and one whose tag does not
// match (ErrBadTag). Reason names either for a metric label.
//
// A tag proves who wrote a record, not that it is the latest: a writer
// with access to the bucket can still delete a record or put back an
// older sealed value of the same key.
package recordauth
