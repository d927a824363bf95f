package main

// A consumer without a group: every partition of TOPIC from its first offset, until COUNT
// records have come (or 60 s pass). Prints one JSON line per record,
// {"p":partition,"o":offset,"k":"key","v":"value in base64"} (a null value prints "v":null),
// then {"read":N}. Used by tests/proxy.rs to read what an encrypting proxy stored, straight
// from the broker.
//
// Usage: go-client read BOOTSTRAP TOPIC COUNT

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func read(args []string) {
	if len(args) != 3 {
		must(fmt.Errorf("usage: read BOOTSTRAP TOPIC COUNT"))
	}
	count, err := strconv.Atoi(args[2])
	must(err)
	cl, err := kgo.NewClient(kgo.SeedBrokers(args[0]), kgo.ClientID("franz-go-read"),
		kgo.ConsumeTopics(args[1]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	must(err)
	defer cl.Close()
	out := json.NewEncoder(os.Stdout)
	n := 0
	for deadline := time.Now().Add(60 * time.Second); n < count && time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(t string, p int32, err error) {
			if err != context.DeadlineExceeded {
				fmt.Fprintf(os.Stderr, "read: fetch %s/%d: %v\n", t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			var v any
			if r.Value != nil {
				v = base64.StdEncoding.EncodeToString(r.Value)
			}
			must(out.Encode(map[string]any{"p": r.Partition, "o": r.Offset, "k": string(r.Key), "v": v}))
			n++
		})
	}
	must(out.Encode(map[string]any{"read": n}))
}
