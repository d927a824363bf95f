package main

// One member of a KIP-848 consumer group (kgo.ServerSideBalancer), for
// tests/broker_kip848.rs: it consumes TOPIC in GROUP, commits after each poll's records
// (rebalances wait while it processes, kgo.BlockRebalanceOnPoll), and prints one JSON line
// per event: {"assigned":[partitions]}, {"revoked":[partitions]},
// {"record":[partition,offset,"value"]} and, once its standard input ends,
// {"closed":true} after closing (which leaves the group). ASSIGNOR is "uniform" (the
// cooperative-sticky balancer) or "range".
//
// Usage: go-client group848 BOOTSTRAP TOPIC GROUP NAME ASSIGNOR

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var sayMu sync.Mutex

func say(v map[string]any) {
	b, err := json.Marshal(v)
	must(err)
	sayMu.Lock()
	defer sayMu.Unlock()
	fmt.Println(string(b))
}

func partitionsOf(m map[string][]int32) []int32 {
	out := []int32{}
	for _, ps := range m {
		out = append(out, ps...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func group848(args []string) {
	bootstrap, topic, group, name, assignor := args[0], args[1], args[2], args[3], args[4]
	balancer := kgo.CooperativeStickyBalancer()
	if assignor == "range" {
		balancer = kgo.RangeBalancer()
	}
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(balancer),
		kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			say(map[string]any{"assigned": partitionsOf(m)})
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			say(map[string]any{"revoked": partitionsOf(m)})
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			say(map[string]any{"lost": partitionsOf(m)})
		}),
	)
	must(err)
	for {
		select {
		case <-stop:
			cl.Close()
			say(map[string]any{"closed": true})
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(t string, p int32, err error) {
			if err != context.DeadlineExceeded && err != context.Canceled {
				say(map[string]any{"error": fmt.Sprintf("%s/%d: %v", t, p, err)})
			}
		})
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			say(map[string]any{"record": []any{r.Partition, r.Offset, string(r.Value)}})
			n++
		})
		if n > 0 {
			cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := cl.CommitUncommittedOffsets(cctx); err != nil {
				say(map[string]any{"error": fmt.Sprintf("commit: %v", err)})
			}
			ccancel()
		}
		cl.AllowRebalance()
	}
}
