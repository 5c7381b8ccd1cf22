package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// echoServer is a real TCP server that sends back what it reads and
// reports it on got.
type echoServer struct {
	ln  net.Listener
	got chan string
	wg  sync.WaitGroup
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln, got: make(chan string, 100)}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						s.got <- string(buf[:n])
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func startProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := Start(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("dialing the proxy: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads as many bytes back within wait; it
// returns what came back and the read's error.
func roundTrip(c net.Conn, msg string, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	return readFor(c, len(msg), wait)
}

func readFor(c net.Conn, n int, wait time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, n)
	got, err := io.ReadFull(c, buf)
	return string(buf[:got]), err
}

// received waits for the server to report msg.
func (s *echoServer) received(t *testing.T, msg string) {
	t.Helper()
	select {
	case got := <-s.got:
		if got != msg {
			t.Fatalf("the server read %q, want %q", got, msg)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("the server never read %q", msg)
	}
}

// What a connection made in each mode sees.
func TestNewConnectionInEachMode(t *testing.T) {
	cases := map[string]struct {
		mode Mode
		// wantRefused: nothing listens.
		wantRefused bool
		// wantReached: the server reads what the client sends.
		wantReached bool
		// wantAnswer: the client reads the server's answer within a second.
		wantAnswer bool
	}{
		"pass":      {mode: Pass, wantReached: true, wantAnswer: true},
		"partition": {mode: Partition, wantRefused: true},
		"hang":      {mode: Hang, wantReached: true},
		"slow":      {mode: Slow, wantReached: true, wantAnswer: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := startEcho(t)
			p := startProxy(t, srv.ln.Addr().String())
			p.setSlowDelays(100*time.Millisecond, 200*time.Millisecond)
			if err := p.Set(tc.mode); err != nil {
				t.Fatal(err)
			}
			c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
			if diff := cmp.Diff(tc.wantRefused, errors.Is(err, syscall.ECONNREFUSED)); diff != "" {
				t.Fatalf("connection refused (-want +got):\n%s\ndial: %v", diff, err)
			}
			if tc.wantRefused {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got, _ := roundTrip(c, "ping", time.Second)
			reached := false
			select {
			case <-srv.got:
				reached = true
			case <-time.After(time.Second):
			}
			if diff := cmp.Diff([]bool{tc.wantReached, tc.wantAnswer}, []bool{reached, got == "ping"}); diff != "" {
				t.Errorf("[server reached, answer read] (-want +got):\n%s\nread %q", diff, got)
			}
		})
	}
}

// A partition cuts the open connections, and the proxy listens again on the
// same address once it is over.
func TestPartitionCutsOpenConnectionsAndHeals(t *testing.T) {
	srv := startEcho(t)
	p := startProxy(t, srv.ln.Addr().String())
	c := dial(t, p.Addr())
	if got, err := roundTrip(c, "one", time.Second); err != nil || got != "one" {
		t.Fatalf("before the partition: read %q, %v", got, err)
	}
	srv.received(t, "one")
	if err := p.Set(Partition); err != nil {
		t.Fatal(err)
	}
	// The cut is seen on the next read, not after a timeout.
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var netErr net.Error
	if err == nil || (errors.As(err, &netErr) && netErr.Timeout()) {
		t.Fatalf("an open connection read %v during the partition, want it cut", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dialing during the partition: %v, want connection refused", err)
	}
	if _, cut := p.Stats(); cut != 1 {
		t.Errorf("the partition cut %d connections, want 1", cut)
	}
	if err := p.Set(Pass); err != nil {
		t.Fatal(err)
	}
	c2 := dial(t, p.Addr())
	if got, err := roundTrip(c2, "two", time.Second); err != nil || got != "two" {
		t.Fatalf("after the partition: read %q, %v", got, err)
	}
}

// A hang keeps an open connection: the client's bytes reach the server,
// its answer is held back, and it arrives once the link passes again.
func TestHangHoldsAnswersOfOpenConnections(t *testing.T) {
	srv := startEcho(t)
	p := startProxy(t, srv.ln.Addr().String())
	c := dial(t, p.Addr())
	if got, err := roundTrip(c, "one", time.Second); err != nil || got != "one" {
		t.Fatalf("before the hang: read %q, %v", got, err)
	}
	srv.received(t, "one")
	if err := p.Set(Hang); err != nil {
		t.Fatal(err)
	}
	got, err := roundTrip(c, "two", 500*time.Millisecond)
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("during the hang the client read %q, %v; want a timeout", got, err)
	}
	srv.received(t, "two")
	if err := p.Set(Pass); err != nil {
		t.Fatal(err)
	}
	if got, err := readFor(c, 3, time.Second); err != nil || got != "two" {
		t.Fatalf("after the hang: read %q, %v; want the held answer", got, err)
	}
}

// Slow delays each chunk, either way, by 0.5 s to 2 s, and keeps the bytes
// in order.
func TestSlowDelaysEachChunk(t *testing.T) {
	srv := startEcho(t)
	p := startProxy(t, srv.ln.Addr().String())
	if err := p.Set(Slow); err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	start := time.Now()
	got, err := roundTrip(c, "slow", 6*time.Second)
	took := time.Since(start)
	if err != nil || got != "slow" {
		t.Fatalf("read %q, %v", got, err)
	}
	// A delay on the way there and one on the way back.
	if took < 2*SlowMin || took > 2*SlowMax+time.Second {
		t.Errorf("the round trip took %s, want between %s and %s", took, 2*SlowMin, 2*SlowMax)
	}
	p.setSlowDelays(10*time.Millisecond, 50*time.Millisecond)
	var want bytes.Buffer
	for i := range 20 {
		msg := []byte{byte('a' + i)}
		want.Write(msg)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	back, err := readFor(c, want.Len(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.String(), back); diff != "" {
		t.Errorf("bytes through a slow link (-want +got):\n%s", diff)
	}
}

// TLS goes through as bytes: the client's handshake is with the server, and
// it sees the server's own certificate.
func TestTLSPassesThrough(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("served"))
	}))
	defer srv.Close()
	p := startProxy(t, srv.Listener.Addr().String())
	resp, err := srv.Client().Get("https://" + p.Addr() + "/")
	if err != nil {
		t.Fatalf("a TLS request through the proxy: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("served", string(body)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if got := resp.TLS.PeerCertificates[0]; !got.Equal(srv.Certificate()) {
		t.Errorf("the client saw certificate %s, not the server's", got.Subject)
	}
}

// A server that is down is a reset for the client, not a hang.
func TestServerDownResetsTheClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close()
	p := startProxy(t, target)
	// The reset may come before the client's connect returns.
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err == nil {
		defer c.Close()
		_, err = readFor(c, 1, 2*time.Second)
	}
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("reaching a closed port through the proxy: %v, want the connection ended", err)
	}
}

func TestCloseStopsListening(t *testing.T) {
	srv := startEcho(t)
	p := startProxy(t, srv.ln.Addr().String())
	c := dial(t, p.Addr())
	if got, err := roundTrip(c, "one", time.Second); err != nil || got != "one" {
		t.Fatalf("read %q, %v", got, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Error("the proxy still accepts connections once closed")
	}
	if err := p.Set(Pass); err == nil {
		t.Error("a closed proxy accepted a mode")
	}
}
