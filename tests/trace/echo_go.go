// Echo pair in Go for udsprobe --trace tests: a server and a client goroutine in one
// process (Go's netpoller, several threads), N messages of SIZE bytes, each echoed back in
// full before the next is sent.
//
// usage: echo_go unix PATH N SIZE | echo_go tcp N SIZE
// Prints one JSON line: {"transport", "endpoint", "messages", "size", "pid"}.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "echo_go: "+format+"\n", args...)
	os.Exit(1)
}

func serve(ln net.Listener, done chan<- error) {
	conn, err := ln.Accept()
	if err != nil {
		done <- err
		return
	}
	defer conn.Close()
	buf := make([]byte, 1<<20)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			if _, werr := conn.Write(buf[:n]); werr != nil {
				done <- werr
				return
			}
		}
		if err == io.EOF {
			done <- nil
			return
		}
		if err != nil {
			done <- err
			return
		}
	}
}

func main() {
	if len(os.Args) < 4 || (os.Args[1] == "unix" && len(os.Args) != 5) ||
		(os.Args[1] == "tcp" && len(os.Args) != 4) {
		fail("usage: echo_go unix PATH N SIZE | echo_go tcp N SIZE")
	}
	kind, addr := os.Args[1], "127.0.0.1:0"
	args := os.Args[2:]
	if kind == "unix" {
		addr, args = os.Args[2], os.Args[3:]
	}
	n, err1 := strconv.Atoi(args[0])
	size, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil || n <= 0 || size <= 0 {
		fail("N and SIZE must be positive integers")
	}
	ln, err := net.Listen(kind, addr)
	if err != nil {
		fail("listen %s %s: %v", kind, addr, err)
	}
	endpoint := ln.Addr().String()
	done := make(chan error, 1)
	go serve(ln, done)

	conn, err := net.Dial(kind, endpoint)
	if err != nil {
		fail("dial %s: %v", endpoint, err)
	}
	msg, reply := make([]byte, size), make([]byte, size)
	for i := 0; i < n; i++ {
		if _, err := conn.Write(msg); err != nil {
			fail("write: %v", err)
		}
		if _, err := io.ReadFull(conn, reply); err != nil {
			fail("read: %v", err)
		}
	}
	conn.Close()
	if err := <-done; err != nil {
		fail("server: %v", err)
	}
	out, _ := json.Marshal(map[string]any{"transport": kind, "endpoint": endpoint,
		"messages": n, "size": size, "pid": os.Getpid()})
	fmt.Println(string(out))
}
