// A net.Dial ping-pong in a Go testing benchmark, as the blog post that found "UDS 5x faster"
// measured it: one connection, the client writes SIZE bytes and reads them back from an echo
// goroutine, b.N times. The transport and address come from the environment so that
// `udsprobe --compare` can run the same binary over both (docs/RECIPES.md):
//
//	PINGPONG_NET=unix PINGPONG_ADDR=/path.sock ./pingpong.test -test.bench . -test.benchtime 20000x
//	PINGPONG_NET=tcp  PINGPONG_ADDR=127.0.0.1:PORT ...                     (PINGPONG_SIZE, default 1)
package gopingpong

import (
	"io"
	"net"
	"os"
	"strconv"
	"testing"
)

func BenchmarkPingPong(b *testing.B) {
	network, addr := os.Getenv("PINGPONG_NET"), os.Getenv("PINGPONG_ADDR")
	if network == "" || addr == "" {
		b.Fatal("set PINGPONG_NET (unix or tcp) and PINGPONG_ADDR")
	}
	size := 1
	if s := os.Getenv("PINGPONG_SIZE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("PINGPONG_SIZE=%q is not a positive size", s)
		}
		size = n
	}
	if network == "unix" {
		os.Remove(addr) // left by the previous b.N round
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial(network, addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, size)
	b.SetBytes(int64(size))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}
