package rpcserve_test

import (
	"net"
	"net/rpc"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batchkv/batchkv/internal/gobrpc"
	"github.com/batchkv/batchkv/internal/rpcserve"
)

// Args are two numbers.
type Args struct{ A, B int }

// Arith is the service under test.
type Arith struct{}

// Add adds; the test's direct function serves it instead.
func (Arith) Add(args *Args, reply *int) error { *reply = args.A + args.B; return nil }

// Mul multiplies; net/rpc serves it.
func (Arith) Mul(args *Args, reply *int) error { *reply = args.A * args.B; return nil }

// direct serves Arith.Add as net/rpc would, and counts the calls it
// serves and the bad bodies it answers.
type direct struct{ served, bad atomic.Int64 }

func (d *direct) serve(req *rpc.Request, codec rpc.ServerCodec) bool {
	if req.ServiceMethod != "Arith.Add" {
		return false
	}
	var args Args
	if err := codec.ReadRequestBody(&args); err != nil {
		d.bad.Add(1)
		_ = codec.WriteResponse(&rpc.Response{ServiceMethod: req.ServiceMethod, Seq: req.Seq, Error: err.Error()}, struct{}{})
		return true
	}
	d.served.Add(1)
	sum := args.A + args.B
	_ = codec.WriteResponse(&rpc.Response{ServiceMethod: req.ServiceMethod, Seq: req.Seq}, &sum)
	return true
}

// start serves one TCP connection with rpcserve and d, and returns a
// net/rpc client of it.
func start(t *testing.T, d *direct) *rpc.Client {
	t.Helper()
	srv := rpc.NewServer()
	if err := srv.Register(Arith{}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		quick := func(args any) bool { return args.(*Args).A >= 0 } // a negative A hands the reading on
		rpcserve.Serve(srv, gobrpc.NewServerCodec(conn, 1<<20, 1<<20), quick, d.serve)
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := rpc.NewClient(conn)
	t.Cleanup(func() {
		_ = c.Close()
		<-done
		_ = ln.Close()
	})
	return c
}

func TestDirectServesItsMethodAndLeavesTheRest(t *testing.T) {
	d := &direct{}
	c := start(t, d)
	var sum, product int
	if err := c.Call("Arith.Add", &Args{3, 4}, &sum); err != nil || sum != 7 {
		t.Fatalf("Add(3, 4) = %d, %v; want 7", sum, err)
	}
	if err := c.Call("Arith.Mul", &Args{3, 4}, &product); err != nil || product != 12 {
		t.Fatalf("Mul(3, 4) = %d, %v; want 12 (the header left to net/rpc must be read again)", product, err)
	}
	if err := c.Call("Arith.Add", &Args{-5, 1}, &sum); err != nil || sum != -4 { // not quick: the reading is handed on
		t.Fatalf("Add(-5, 1) = %d, %v; want -4", sum, err)
	}
	if n := d.served.Load(); n != 2 {
		t.Fatalf("direct served %d calls, want the 2 Adds", n)
	}
	var none int
	if err := c.Call("Arith.Div", &Args{3, 4}, &none); err == nil || !strings.Contains(err.Error(), "can't find method") {
		t.Fatalf("Div: %v; want net/rpc's unknown-method error", err)
	}
}

func TestDirectAnswersABadBodyAndReadsOn(t *testing.T) {
	d := &direct{}
	c := start(t, d)
	var sum int
	err := c.Call("Arith.Add", "not two numbers", &sum)
	if err == nil {
		t.Fatal("Add with a string body succeeded")
	}
	if _, ok := err.(rpc.ServerError); !ok {
		t.Fatalf("Add with a string body: %v (%T); want the server's error", err, err)
	}
	if err := c.Call("Arith.Add", &Args{1, 2}, &sum); err != nil || sum != 3 {
		t.Fatalf("Add(1, 2) after a bad body = %d, %v; want 3", sum, err)
	}
	if d.bad.Load() != 1 || d.served.Load() != 1 {
		t.Fatalf("direct answered %d bad bodies and served %d calls, want 1 and 1", d.bad.Load(), d.served.Load())
	}
}

func TestDirectAndNetRPCInterleaved(t *testing.T) {
	d := &direct{}
	c := start(t, d)
	const callers, calls = 8, 200
	var wg sync.WaitGroup
	errs := make(chan string, callers)
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				a := i - calls/2 // negative ones are not quick
				var got int
				method, want := "Arith.Add", a+g
				if i%3 == 0 {
					method, want = "Arith.Mul", a*g
				}
				if err := c.Call(method, &Args{a, g}, &got); err != nil || got != want {
					errs <- method
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for m := range errs {
		t.Errorf("a caller got a wrong answer or an error from %s", m)
	}
	if want := int64(callers * (calls - (calls+2)/3)); d.served.Load() != want {
		t.Errorf("direct served %d calls, want %d", d.served.Load(), want)
	}
}
