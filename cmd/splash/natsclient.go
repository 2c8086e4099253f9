package main

// natsClientFlags are the flags of every command that connects to NATS as a
// client (host, worker, bench).
type natsClientFlags struct {
	url      string
	user     string
	password string
	tls      natsTLSFlags
}

func (n *natsClientFlags) register(fs *flagSet) {
	fs.stringVar(&n.url, "nats-url", envNatsURL, defaultNatsURL, "NATS server `urls`, comma-separated")
	fs.stringVar(&n.user, "nats-user", envNatsUser, "", "NATS `user` name, when the server requires one")
	fs.stringVar(&n.password, "nats-password", envNatsPassword, "", "NATS `password` for --nats-user (prefer the variable: flags show in process lists)")
	n.tls.register(fs)
}

// apiClientFlags are the flags of every command that talks to a host's HTTP
// API (run, ops, cancel, bench).
type apiClientFlags struct {
	url   string
	token string
}

func (c *apiClientFlags) register(fs *flagSet) {
	fs.stringVar(&c.url, "api-url", envAPIURL, defaultAPIURL, "host API base `url`")
	fs.stringVar(&c.token, "api-token", envAPIToken, "", "bearer `token` for the host API (prefer the variable: flags show in process lists)")
}
