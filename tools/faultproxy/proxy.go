// Package faultproxy forwards the bytes of TCP connections between clients
// and one server, TLS included, which it never terminates, and breaks the
// link on command: cut it, hang it, or slow it. The soak (tools/soak) puts
// one between Courier and each worker's API server, so that Courier can be
// cut off from a worker that goes on running its jobs, as a real network
// partition does, while everything else reaches that API server directly.
package faultproxy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Mode is what the proxy does with the link.
type Mode string

const (
	// Pass forwards every byte both ways as it comes.
	Pass Mode = "pass"
	// Partition refuses new connections (nothing listens) and cuts the open
	// ones, both ways, with a reset.
	Partition Mode = "partition"
	// Hang answers nothing: new connections are accepted and open ones kept,
	// the client's bytes still reach the server, which may act on them (a
	// request may commit), but none of the server's come back until the
	// mode changes, so a TLS handshake never completes.
	Hang Mode = "hang"
	// Slow forwards every chunk read, either way, after a delay drawn
	// between the slow bounds (0.5 s to 2 s), in order.
	Slow Mode = "slow"
)

// The delays of Slow, as a link to a far or congested region would add.
const (
	SlowMin = 500 * time.Millisecond
	SlowMax = 2 * time.Second
)

// dialTimeout bounds the connection to the server for each accepted one.
const dialTimeout = 5 * time.Second

// relistenFor bounds the retries to listen again on the proxy's address
// after a partition, should the port be slow to free.
const relistenFor = 10 * time.Second

// chunkSize is the most one read forwards at once.
const chunkSize = 32 << 10

// Proxy forwards connections made to Addr to the server at its target.
type Proxy struct {
	target string
	addr   string
	// setMu serializes mode changes, which may listen again.
	setMu sync.Mutex

	mu   sync.Mutex
	mode Mode
	// slowMin and slowMax bound the delay of Slow; tests shorten them.
	slowMin, slowMax time.Duration
	// changed is closed, and replaced, at every change of mode, so that the
	// forwarding held back by Hang or Slow looks at the mode again.
	changed  chan struct{}
	listener net.Listener
	links    map[*link]struct{}
	closed   bool
	// accepted counts the connections accepted; cut those Partition cut.
	accepted, cut int
	wg            sync.WaitGroup
}

// Start listens on a free loopback port and forwards what it accepts to
// target (host:port), in Pass.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for a proxy to %s: %w", target, err)
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), slowMin: SlowMin, slowMax: SlowMax,
		mode: Pass, changed: make(chan struct{}), links: map[*link]struct{}{}}
	p.serve(ln)
	return p, nil
}

// Addr is where the proxy listens, host:port; it stays the same across
// partitions.
func (p *Proxy) Addr() string { return p.addr }

// Target is the server the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Stats counts the connections the proxy accepted and those partitions cut.
func (p *Proxy) Stats() (accepted, cut int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted, p.cut
}

// Set changes the mode. Partition stops listening and cuts every open
// connection; leaving it listens again on the same address.
func (p *Proxy) Set(m Mode) error {
	switch m {
	case Pass, Partition, Hang, Slow:
	default:
		return fmt.Errorf("unknown proxy mode %q", m)
	}
	p.setMu.Lock()
	defer p.setMu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errors.New("the proxy is closed")
	}
	was := p.mode
	p.mode = m
	close(p.changed)
	p.changed = make(chan struct{})
	var cut []*link
	var ln net.Listener
	if m == Partition {
		ln, p.listener = p.listener, nil
		for l := range p.links {
			cut = append(cut, l)
		}
		p.cut += len(cut)
	}
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, l := range cut {
		l.reset()
	}
	if was == Partition && m != Partition {
		return p.listenAgain()
	}
	return nil
}

// listenAgain listens on the proxy's address after a partition.
func (p *Proxy) listenAgain() error {
	deadline := time.Now().Add(relistenFor)
	for {
		ln, err := net.Listen("tcp", p.addr)
		if err == nil {
			p.serve(ln)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("listening again on %s after a partition: %w", p.addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Close stops listening, cuts every connection and waits for the
// forwarding to end.
func (p *Proxy) Close() error {
	p.setMu.Lock()
	defer p.setMu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	ln := p.listener
	p.listener = nil
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, l := range links {
		l.reset()
	}
	p.wg.Wait()
	return nil
}

// serve accepts connections on ln until it is closed.
func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.listener = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.handle(c) })
		}
	})
}

// state returns the mode and the channel closed at its next change.
func (p *Proxy) state() (Mode, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.changed
}

// handle connects an accepted connection to the server and forwards
// between them until either ends or a partition cuts them.
func (p *Proxy) handle(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil {
		// The server is down: the client sees its connection reset, as if
		// it had reached it.
		resetConn(client)
		return
	}
	l := &link{client: client, server: server, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.mode == Partition {
		p.mu.Unlock()
		l.reset()
		return
	}
	p.accepted++
	p.links[l] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
		l.close()
	}()
	var wg sync.WaitGroup
	wg.Go(func() { p.forward(l, client, server, false) })
	wg.Go(func() { p.forward(l, server, client, true) })
	wg.Wait()
}

// chunk is what one read returned, and when.
type chunk struct {
	data []byte
	read time.Time
}

// forward copies src to dst, chunk by chunk, as the mode allows; answers
// are the server's bytes, which Hang holds back. When src ends, the whole
// link is closed once what was read has been written: the client gone,
// nobody waits for an answer; the server gone, nothing more will come.
func (p *Proxy) forward(l *link, src, dst net.Conn, answers bool) {
	chunks := make(chan chunk, 16)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, chunkSize)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case chunks <- chunk{data: buf[:n], read: time.Now()}:
				case <-l.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	var due time.Time
	for c := range chunks {
		if !p.await(l, c, answers, &due) {
			break
		}
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	l.close()
	// Unblock the reader, should it be waiting to hand a chunk over.
	for range chunks {
	}
}

// await waits until c may be written: while Hang holds answers back, and in
// Slow until its delay is over. Delays only grow from one chunk to the
// next, so that bytes keep their order. It returns false once the link is
// done.
func (p *Proxy) await(l *link, c chunk, answers bool, due *time.Time) bool {
	var until time.Time // c's time to go in Slow, drawn once
	for {
		mode, changed := p.state()
		var fired <-chan time.Time
		switch {
		case mode == Hang && answers:
		case mode == Slow:
			if until.IsZero() {
				until = c.read.Add(p.slowDelay())
				if until.Before(*due) {
					until = *due
				}
				*due = until
			}
			d := time.Until(until)
			if d <= 0 {
				return true
			}
			fired = time.After(d)
		default:
			return true
		}
		select {
		case <-fired:
			return true
		case <-changed:
		case <-l.done:
			return false
		}
	}
}

func (p *Proxy) slowDelay() time.Duration {
	p.mu.Lock()
	lo, hi := p.slowMin, p.slowMax
	p.mu.Unlock()
	return lo + rand.N(hi-lo+1)
}

// setSlowDelays changes the bounds of Slow's delays.
func (p *Proxy) setSlowDelays(lo, hi time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slowMin, p.slowMax = lo, hi
}

// link is one client connection and its connection to the server.
type link struct {
	client, server net.Conn
	once           sync.Once
	done           chan struct{}
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		_ = l.client.Close()
		_ = l.server.Close()
	})
}

// reset closes both connections with a reset rather than an orderly end,
// as a firewall rejecting the flow would.
func (l *link) reset() {
	l.once.Do(func() {
		close(l.done)
		resetConn(l.client)
		resetConn(l.server)
	})
}

func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
