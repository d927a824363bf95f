// Failover modes of the franz-go program, for tests/proxy_cluster.rs (a three-broker
// cluster behind `kwire proxy`, one broker killed and restarted while these run):
//
//	go-client cluster-produce BOOTSTRAP TOPIC SECONDS NAME
//	    an idempotent producer (acks=all) sends NAME-0, NAME-1, ... for SECONDS, record i
//	    to partition i mod PARTITIONS (env KWIRE_PARTITIONS, default 3), one every 4 ms, then
//	    waits for every answer; prints one JSON object: {"acked": {"P": [[offset, value],
//	    ...]}, "errors": [...]}
//	go-client cluster-consume BOOTSTRAP TOPIC GROUP STOPFILE NAME
//	    a member of consumer group GROUP, from the start, committing after each poll (the
//	    group rebalances only between polls); prints each record as it comes, one JSON
//	    object a line ({"p": P, "o": OFFSET, "v": VALUE}), and ends once STOPFILE exists
//	    and a poll brought nothing
//
// Progress goes to stderr.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func clusterPartitions() int {
	if n, err := strconv.Atoi(os.Getenv("KWIRE_PARTITIONS")); err == nil && n > 0 {
		return n
	}
	return 3
}

func clusterProduce(args []string) {
	if len(args) != 4 {
		must(fmt.Errorf("usage: cluster-produce BOOTSTRAP TOPIC SECONDS NAME"))
	}
	bootstrap, topic, name := args[0], args[1], args[3]
	seconds, err := strconv.Atoi(args[2])
	must(err)
	parts := clusterPartitions()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID(name),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.RetryTimeout(90*time.Second))
	must(err)
	var mu sync.Mutex
	acked := map[string][][2]any{}
	for p := 0; p < parts; p++ {
		acked[strconv.Itoa(p)] = [][2]any{}
	}
	errs := []string{}
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	tick := time.NewTicker(4 * time.Millisecond)
	i := 0
	for time.Now().Before(end) {
		<-tick.C
		v := fmt.Sprintf("%s-%d", name, i)
		r := &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: []byte(v)}
		cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", r.Value, err))
				return
			}
			k := strconv.Itoa(int(r.Partition))
			acked[k] = append(acked[k], [2]any{r.Offset, string(r.Value)})
		})
		i++
		if i%1000 == 0 {
			fmt.Fprintf(os.Stderr, "%s: %d records sent\n", name, i)
		}
	}
	tick.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	must(cl.Flush(ctx))
	cl.Close()
	mu.Lock()
	b, err := json.Marshal(map[string]any{"client": "franz-go", "sent": i, "acked": acked, "errors": errs})
	mu.Unlock()
	must(err)
	fmt.Println(string(b))
}

func clusterConsume(args []string) {
	if len(args) != 5 {
		must(fmt.Errorf("usage: cluster-consume BOOTSTRAP TOPIC GROUP STOPFILE NAME"))
	}
	bootstrap, topic, group, stop, name := args[0], args[1], args[2], args[3], args[4]
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID(name),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(), kgo.SessionTimeout(10*time.Second),
		kgo.RetryTimeout(90*time.Second))
	must(err)
	out := json.NewEncoder(os.Stdout)
	n := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		got := 0
		fs.EachError(func(t string, p int32, err error) {
			if err != context.DeadlineExceeded {
				fmt.Fprintf(os.Stderr, "%s: fetch %s/%d: %v\n", name, t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			must(out.Encode(map[string]any{"p": r.Partition, "o": r.Offset, "v": string(r.Value)}))
			got++
		})
		n += got
		if got > 0 {
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := cl.CommitUncommittedOffsets(cctx); err != nil {
				fmt.Fprintf(os.Stderr, "%s: commit: %v\n", name, err)
			}
			ccancel()
		}
		cl.AllowRebalance()
		if got == 0 {
			if _, err := os.Stat(stop); err == nil {
				break
			}
		}
	}
	fmt.Fprintf(os.Stderr, "%s: %d records consumed\n", name, n)
	cl.LeaveGroup()
	cl.Close()
}
