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
//	go-client cluster-transact BOOTSTRAP IN OUT GROUP TXN_ID STOPFILE NAME
//	    exactly once, consume-transform-produce: a member of GROUP consuming IN with
//	    read_committed, transactional id TXN_ID (kgo.GroupTransactSession, stable offsets
//	    required). Each poll is one transaction: every record of IN partition P at offset O
//	    is produced to OUT partition P with its value and headers "in-p" = P, "in-o" = O,
//	    and the group's offsets are committed in the same transaction. An aborted end
//	    (rebalance, lost coordinator, failed produce) rewinds to the committed offsets and
//	    the records are processed again. After each committed transaction, prints its
//	    records as cluster-consume does ({"p": P, "o": O, "v": VALUE} of IN); ends once
//	    STOPFILE exists and a poll brought nothing. Its counts go to stderr.
//	go-client cluster-read-committed BOOTSTRAP TOPIC WANT NAME
//	    reads TOPIC from the start with read_committed, no group, until it has WANT records
//	    and then 3 s go by with nothing new (60 s at most); prints each record ({"p", "o",
//	    "v", "ip", "io"}: ip and io from its "in-p" and "in-o" headers, -1 when absent)
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

// The modes added for exactly-once are dispatched here, before main runs, so that main.go's
// list of modes stays as it is.
func init() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case "cluster-transact":
		clusterTransact(os.Args[2:])
	case "cluster-read-committed":
		clusterReadCommitted(os.Args[2:])
	default:
		return
	}
	os.Exit(0)
}

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

func clusterTransact(args []string) {
	if len(args) != 7 {
		must(fmt.Errorf("usage: cluster-transact BOOTSTRAP IN OUT GROUP TXN_ID STOPFILE NAME"))
	}
	bootstrap, in, outTopic, group, txnID, stop, name := args[0], args[1], args[2], args[3], args[4], args[5], args[6]
	open := func() *kgo.GroupTransactSession {
		sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(bootstrap), kgo.ClientID(name),
			kgo.TransactionalID(txnID), kgo.TransactionTimeout(30*time.Second),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(in),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(10*time.Second),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(2*time.Millisecond),
			kgo.RetryTimeout(90*time.Second))
		must(err)
		return sess
	}
	sess := open()
	out := json.NewEncoder(os.Stdout)
	var committed, aborted, records, reprocessed, reopened int
	polled := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := sess.PollFetches(ctx)
		cancel()
		fs.EachError(func(t string, p int32, err error) {
			if err != context.DeadlineExceeded {
				fmt.Fprintf(os.Stderr, "%s: fetch %s/%d: %v\n", name, t, p, err)
			}
		})
		got := fs.Records()
		if len(got) > 0 && time.Since(polled) > 3*time.Second {
			fmt.Fprintf(os.Stderr, "%s: %s: %d records after %.1fs without any\n",
				name, time.Now().UTC().Format("15:04:05.000"), len(got), time.Since(polled).Seconds())
		}
		if len(got) > 0 {
			polled = time.Now()
		}
		if len(got) == 0 {
			if _, err := os.Stat(stop); err == nil {
				break
			}
			continue
		}
		began := time.Now()
		if err := sess.Begin(); err != nil {
			// The producer ID could not be initialised while a coordinator was down, which
			// franz-go treats as fatal for this session. Nothing of these records was
			// produced; a new session resumes from the group's committed offsets.
			reopened++
			if reopened > 5 {
				must(fmt.Errorf("%s: beginning a transaction: %w", name, err))
			}
			fmt.Fprintf(os.Stderr, "%s: %s: beginning a transaction failed: %v; a new session takes over\n",
				name, time.Now().UTC().Format("15:04:05.000"), err)
			sess.Close()
			sess = open()
			continue
		}
		e := kgo.AbortingFirstErrPromise(sess.Client())
		for _, r := range got {
			sess.Produce(context.Background(), &kgo.Record{
				Topic: outTopic, Partition: r.Partition, Value: r.Value,
				Headers: []kgo.RecordHeader{
					{Key: "in-p", Value: []byte(strconv.Itoa(int(r.Partition)))},
					{Key: "in-o", Value: []byte(strconv.FormatInt(r.Offset, 10))},
				},
			}, e.Promise())
		}
		ctx, cancel = context.WithTimeout(context.Background(), 120*time.Second)
		ok, err := sess.End(ctx, kgo.TransactionEndTry(e.Err() == nil))
		cancel()
		if err != nil {
			// Not retryable in this session (franz-go's contract: the transactional id failed,
			// or the retries ran out while a coordinator was down), and the outcome is unknown.
			// A new session with the same transactional id fences this one: Kafka completes or
			// aborts the open transaction, and the group resumes from its committed offsets.
			// The records are not reported here; the read_committed output is what counts.
			reopened++
			if reopened > 5 {
				must(fmt.Errorf("%s: ending a transaction of %d records: %w (produce: %v)", name, len(got), err, e.Err()))
			}
			fmt.Fprintf(os.Stderr, "%s: %s: ending a transaction of %d records failed: %v (produce: %v); a new session takes over\n",
				name, time.Now().UTC().Format("15:04:05.000"), len(got), err, e.Err())
			sess.Close()
			sess = open()
			continue
		}
		if !ok {
			aborted++
			reprocessed += len(got)
			fmt.Fprintf(os.Stderr, "%s: transaction of %d records aborted (produce: %v); they are processed again\n",
				name, len(got), e.Err())
			continue
		}
		committed++
		records += len(got)
		if took := time.Since(began); took > 2*time.Second {
			fmt.Fprintf(os.Stderr, "%s: %s: a transaction of %d records took %.1fs to commit\n",
				name, time.Now().UTC().Format("15:04:05.000"), len(got), took.Seconds())
		}
		for _, r := range got {
			must(out.Encode(map[string]any{"p": r.Partition, "o": r.Offset, "v": string(r.Value)}))
		}
	}
	fmt.Fprintf(os.Stderr, "%s: %d transactions committed (%d records), %d aborted (%d records), %d sessions reopened\n",
		name, committed, records, aborted, reprocessed, reopened)
	sess.Close()
}

func clusterReadCommitted(args []string) {
	if len(args) != 4 {
		must(fmt.Errorf("usage: cluster-read-committed BOOTSTRAP TOPIC WANT NAME"))
	}
	bootstrap, topic, name := args[0], args[1], args[3]
	want, err := strconv.Atoi(args[2])
	must(err)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID(name),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RetryTimeout(30*time.Second))
	must(err)
	defer cl.Close()
	out := json.NewEncoder(os.Stdout)
	header := func(r *kgo.Record, key string) int64 {
		for _, h := range r.Headers {
			if h.Key == key {
				if n, err := strconv.ParseInt(string(h.Value), 10, 64); err == nil {
					return n
				}
			}
		}
		return -1
	}
	n := 0
	end := time.Now().Add(60 * time.Second)
	idle := time.Now()
	for time.Now().Before(end) {
		if n >= want && time.Since(idle) > 3*time.Second {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(t string, p int32, err error) {
			if err != context.DeadlineExceeded {
				fmt.Fprintf(os.Stderr, "%s: fetch %s/%d: %v\n", name, t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			must(out.Encode(map[string]any{"p": r.Partition, "o": r.Offset, "v": string(r.Value),
				"ip": header(r, "in-p"), "io": header(r, "in-o")}))
			n++
			idle = time.Now()
		})
	}
	fmt.Fprintf(os.Stderr, "%s: %d committed records read from %s\n", name, n, topic)
}
