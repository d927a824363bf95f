package main

// Transactions against kwire::broker (tests/broker.rs): commit, abort, and a zombie fenced
// by a new producer with the same transactional id, all on partition 0 of TOPIC; then
// read_committed and read_uncommitted consumers read it from the start. Prints one JSON
// line: the zombie's errors and the records each consumer saw, as [offset, value].
//
// Usage: go-client txn BOOTSTRAP TOPIC

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func txnClient(bootstrap, topic, id string) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID("franz-go-txn-test"),
		kgo.TransactionalID(id), kgo.TransactionTimeout(60*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	must(err)
	return cl
}

func produceValues(ctx context.Context, cl *kgo.Client, values ...string) error {
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
			return err
		}
	}
	return nil
}

func readAll(bootstrap, topic string, level kgo.IsolationLevel) [][2]any {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.FetchIsolationLevel(level),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	must(err)
	defer cl.Close()
	out := [][2]any{}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, [2]any{r.Offset, string(r.Value)})
			n++
		})
		if n == 0 && len(out) > 0 {
			break
		}
	}
	return out
}

func txn(args []string) {
	bootstrap, topic := args[0], args[1]
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	cl := txnClient(bootstrap, topic, topic+"-go")
	must(cl.BeginTransaction())
	must(produceValues(ctx, cl, "g-0", "g-1", "g-2", "g-3", "g-4"))
	must(cl.EndTransaction(ctx, kgo.TryCommit))
	must(cl.BeginTransaction())
	must(produceValues(ctx, cl, "ga-0", "ga-1", "ga-2"))
	must(cl.EndTransaction(ctx, kgo.TryAbort))
	cl.Close()

	zombie := txnClient(bootstrap, topic, topic+"-gz")
	must(zombie.BeginTransaction())
	must(produceValues(ctx, zombie, "gz-0"))
	fresh := txnClient(bootstrap, topic, topic+"-gz")
	must(fresh.BeginTransaction())
	must(produceValues(ctx, fresh, "gf-0"))
	zctx, zcancel := context.WithTimeout(ctx, 20*time.Second)
	zproduce := produceValues(zctx, zombie, "gz-1")
	zcommit := zombie.EndTransaction(zctx, kgo.TryCommit)
	zcancel()
	zombie.Close()
	must(fresh.EndTransaction(ctx, kgo.TryCommit))
	fresh.Close()

	errText := func(e error) any {
		if e == nil {
			return nil
		}
		return e.Error()
	}
	b, _ := json.Marshal(map[string]any{
		"zombie_produce": errText(zproduce),
		"zombie_commit":  errText(zcommit),
		"committed":      readAll(bootstrap, topic, kgo.ReadCommitted()),
		"uncommitted":    readAll(bootstrap, topic, kgo.ReadUncommitted()),
	})
	fmt.Println(string(b))
}
