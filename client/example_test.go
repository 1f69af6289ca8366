package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/wire"
)

// exampleServer starts a real server on a free loopback port, with TLS
// when id is set, and returns its address and a function that stops it.
// In your program the cluster runs elsewhere: this stands in for
// ./run-cluster.sh or kvsserver.
func exampleServer(id *auth.Identity) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv, err := kvs.New(kvs.Config{Identity: id, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }
}

// The README's example: learn the cluster from any server, then read and
// write. Every call takes a context: its deadline bounds the call,
// retries included. client.Discover speaks plaintext (see the TLS
// example for a TLS cluster).
func Example() {
	addr, stop := exampleServer(nil)
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cfg, err := client.Discover(addr, 5*time.Second) // servers, shards and RF
	if err != nil {
		fmt.Println("discover:", err)
		return
	}
	c, err := client.New(cfg)
	if err != nil {
		fmt.Println("new:", err)
		return
	}
	defer c.Close()

	if err := c.Put(ctx, "user:1", "alice"); err != nil {
		fmt.Println("put:", err)
		return
	}
	v, err := c.Get(ctx, "user:1")
	fmt.Println(v, err)
	if err := c.Delete(ctx, "user:1"); err != nil {
		fmt.Println("delete:", err)
		return
	}
	_, err = c.Get(ctx, "user:1")
	fmt.Println(errors.Is(err, client.ErrNotFound))
	// Output:
	// alice <nil>
	// true
}

// An explicit batch: the ops are split by the server (or shard) that
// owns each key, sent at once, and answered one result per op, in
// order.
func ExampleClient_Do() {
	addr, stop := exampleServer(nil)
	defer stop()
	c, err := client.New(client.Config{Servers: []string{addr}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	res, err := c.Do(context.Background(), []wire.Op{
		{Code: wire.OpPut, Key: "a", Value: "1"},
		{Code: wire.OpGet, Key: "a"},
		{Code: wire.OpGet, Key: "b"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res {
		fmt.Printf("%s %q\n", r.Status, r.Value)
	}
	// Output:
	// ok ""
	// ok "1"
	// not found ""
}

// Against a TLS cluster, discover with client.Admin{TLS: ...}: the Config
// it returns carries the same tls.Config, so client.New dials with it.
// The certificates come from kvsctl certs (here made in a temporary
// directory); the server's must name the address dialled.
func ExampleAdmin_Discover() {
	dir, err := os.MkdirTemp("", "batchkv-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ids, err := auth.MakeLocal(dir, []string{"127.0.0.1"}) // as kvsctl certs init and issue do
	if err != nil {
		fmt.Println(err)
		return
	}
	addr, stop := exampleServer(ids.Node)
	defer stop()

	// In a program: id, err := auth.Load("ca.crt", "alice.crt", "alice.key").
	admin := client.Admin{TLS: ids.Client.ClientConfig()}
	cfg, err := admin.Discover(addr, 5*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := client.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	fmt.Println(c.Put(ctx, "k", "v"))
	fmt.Println(c.Get(ctx, "k"))

	// Plaintext discovery of a TLS server says what is wrong.
	_, err = client.Discover(addr, 5*time.Second)
	fmt.Println(errors.Is(err, client.ErrServerWantsTLS))
	// Output:
	// <nil>
	// v <nil>
	// true
}
