// Package recordauth authenticates records a process stores at rest in a
// place it does not alone control (a JetStream bucket), with a key that
// never travels over NATS.
//
// Each store has its own Key, derived from a key ring (protocol.Keys: the
// ring a host or a pool holds, provisioned from a file or the environment,
// or a single frame key) with HKDF-SHA256 and the store's label, so a tag
// made for one store never verifies in another and the ring's keys
// themselves never sign a record.
//
//	k, _ := recordauth.Derive(ring, recordauth.StoreSessions)
//	data := k.Seal("s.s-h1-0123456789ab-1", body)
//	body, err := k.Open("s.s-h1-0123456789ab-1", data)
//
// A sealed record is the text "sfr2." + key id + "." + base64url(tag) +
// "." + body. Seal uses the ring's current key; Open picks the key the
// record names, so a ring rotated since still opens what its retired keys
// sealed, without trying every key. The tag is HMAC-SHA256 over the
// record's storage key and its body, so a record copied under another key
// does not verify either. Records written before key rings ("sfr1." +
// tag + "." + body, no key id) are tried under each key of the ring.
//
// Open refuses a record without a prefix (ErrUnsigned: written before
// records were sealed, or by a writer without the key), one sealed with a
// key the ring lacks (ErrUnknownKey, within ErrBadTag) and one whose tag
// does not match (ErrBadTag). Reason names either for a metric label;
// SealedBy names the key that sealed a record, for counting what each key
// still holds before it is dropped.
//
// A tag proves who wrote a record, not that it is the latest: a writer
// with access to the bucket can still delete a record or put back an
// older sealed value of the same key.
package recordauth
