// franz-go's kfake as a process of its own, for benches/kfake.sh: one node on a free
// loopback port (kfake's default listener), no logging, no profiling, until SIGINT or
// SIGTERM.
//
// Usage: kfake-broker   (prints "kfake: listening on 127.0.0.1:PORT")
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	fmt.Printf("kfake: listening on %s\n", c.ListenAddrs()[0])
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	c.Close()
}
