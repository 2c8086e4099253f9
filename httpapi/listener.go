package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/splashfabric/splashfabric/httpapi/apiwire"
)

// refuseLinger bounds how long a refused connection is kept to deliver
// its 503: the request it may already have sent is read and discarded
// meanwhile, so closing does not reset the connection before the client
// reads the answer.
const refuseLinger = time.Second

// maxLingering bounds the refused connections lingering at once; beyond
// it a refused connection is answered and closed at once, so a flood of
// connections costs no more goroutines than this.
const maxLingering = 64

// LimitListener returns a listener that hands l's connections on while
// fewer than max are open, and answers any beyond that with 503
// connection_limit (a JSON error body, Retry-After, Connection: close),
// calls onRefused (if not nil) with "connection_limit", and closes it. A
// connection counts from Accept until it is closed. Close waits for the
// refused connections still lingering.
func LimitListener(l net.Listener, max int, onRefused func(code string)) net.Listener {
	return LimitListenerPerClient(l, max, 0, onRefused)
}

// LimitListenerPerClient is LimitListener that also bounds the
// connections one client holds at once, by its IP address: one beyond
// perClient is answered with 429 client_connection_limit (Retry-After,
// Connection: close), reported to onRefused with that code, and closed,
// so one client cannot hold every connection of the host, idle or not.
// A perClient of zero, or a listener whose connections have no IP
// address, bounds the total alone.
func LimitListenerPerClient(l net.Listener, max, perClient int, onRefused func(code string)) net.Listener {
	if onRefused == nil {
		onRefused = func(string) {}
	}
	return &limitListener{
		Listener:      l,
		slots:         make(chan struct{}, max),
		lingering:     make(chan struct{}, maxLingering),
		onRefused:     onRefused,
		refusal:       refusalResponse(max),
		perClient:     perClient,
		clientRefusal: clientRefusalResponse(perClient),
		clients:       make(map[string]int),
		refused:       make(map[net.Conn]struct{}),
	}
}

// limitListener is LimitListener's. Accept runs on the server's accept
// goroutine; the lingering goroutines are started by it and waited for by
// Close.
type limitListener struct {
	net.Listener
	// slots holds a token per open connection.
	slots chan struct{}
	// lingering holds a token per lingering refused connection.
	lingering chan struct{}
	onRefused func(string)
	refusal   []byte
	wg        sync.WaitGroup
	// perClient bounds each client address's connections; clientRefusal
	// answers one over it.
	perClient     int
	clientRefusal []byte

	// mu guards refused, the lingering connections, so Close can cut
	// their linger short, closed, and clients, the open connections of
	// each client address.
	mu      sync.Mutex
	refused map[net.Conn]struct{}
	closed  bool
	clients map[string]int
}

// refusalResponse is the whole HTTP response sent on a refused
// connection, in the API's one error shape.
func refusalResponse(max int) []byte {
	body, _ := json.Marshal(apiwire.ErrorBody{Error: apiwire.ErrorDetail{
		Code:    "connection_limit",
		Message: fmt.Sprintf("%v: the host serves %d connections at once", ErrConnectionLimit, max),
	}})
	body = append(body, '\n')
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"+
		"Retry-After: %s\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", retryAfterSeconds, len(body), body)
}

// clientRefusalResponse is the whole HTTP response sent on a connection
// over its client's bound.
func clientRefusalResponse(perClient int) []byte {
	body, _ := json.Marshal(apiwire.ErrorBody{Error: apiwire.ErrorDetail{
		Code:    "client_connection_limit",
		Message: fmt.Sprintf("%v: one client holds at most %d connections at once", ErrClientConnectionLimit, perClient),
	}})
	body = append(body, '\n')
	return fmt.Appendf(nil, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"+
		"Retry-After: %s\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", retryAfterSeconds, len(body), body)
}

// Accept returns the next connection there is room for, refusing the
// others as they come.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
		default:
			l.onRefused("connection_limit")
			l.refuse(c, l.refusal)
			continue
		}
		client, ok := l.enter(c)
		if !ok {
			<-l.slots
			l.onRefused("client_connection_limit")
			l.refuse(c, l.clientRefusal)
			continue
		}
		return &limitConn{Conn: c, release: func() { <-l.slots; l.leave(client) }}, nil
	}
}

// enter counts c against its client's bound, unless the client holds as
// many as it may; it returns the client's key ("" when not counted).
func (l *limitListener) enter(c net.Conn) (string, bool) {
	if l.perClient <= 0 {
		return "", true
	}
	addr, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return "", true
	}
	client := addr.IP.String()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clients[client] >= l.perClient {
		return "", false
	}
	l.clients[client]++
	return client, true
}

// leave gives a client's connection back.
func (l *limitListener) leave(client string) {
	if client == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clients[client]--; l.clients[client] <= 0 {
		delete(l.clients, client)
	}
}

// refuse answers c with the refusal and closes it, lingering in a
// goroutine of its own when one is free.
func (l *limitListener) refuse(c net.Conn, refusal []byte) {
	select {
	case l.lingering <- struct{}{}:
		l.mu.Lock()
		if !l.closed {
			// Under mu, so Close either sees c (and cuts the
			// deadline set here short) or stops this Add.
			_ = c.SetDeadline(time.Now().Add(refuseLinger))
			l.refused[c] = struct{}{}
			l.wg.Add(1)
			l.mu.Unlock()
			go l.linger(c, refusal)
			return
		}
		l.mu.Unlock()
		<-l.lingering
	default:
	}
	// A fresh connection's send buffer is empty, so this write does not
	// wait; the deadline holds if it ever would.
	_ = c.SetWriteDeadline(time.Now().Add(refuseLinger))
	_, _ = c.Write(refusal)
	_ = c.Close()
}

// linger writes the refusal, half-closes, and reads what the client sent
// until it closes or refuseLinger passes.
func (l *limitListener) linger(c net.Conn, refusal []byte) {
	defer func() {
		_ = c.Close()
		l.mu.Lock()
		delete(l.refused, c)
		l.mu.Unlock()
		<-l.lingering
		l.wg.Done()
	}()
	if _, err := c.Write(refusal); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// Close stops accepting, cuts the lingering refusals short and waits for
// them.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	l.closed = true
	for c := range l.refused {
		_ = c.SetDeadline(time.Now())
	}
	l.mu.Unlock()
	l.wg.Wait()
	return err
}

// limitConn gives its slot back when closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot, once.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes when the connection can, which net/http uses to
// let a client read an answer before the connection ends.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
