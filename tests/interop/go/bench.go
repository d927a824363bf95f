package main

// The load of the proxy benchmark (benches/proxy.sh): producers sending 1 KB records and a
// consumer fetching them, for a fixed time, with every request's latency (from writing the
// request to reading the whole response, franz-go's BrokerE2E hook).
//
// Usage: go-client bench BOOTSTRAP TOPIC SECONDS PRODUCERS RATE
//
// RATE is records per second per producer; 0 sends as fast as the client can (throughput),
// a fixed rate measures latency at that load (benches/proxy.sh's moderate phase). Records
// are paced to a schedule (the i-th at i/RATE s), so the rate holds however long a sleep
// takes.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type latencies struct {
	mu sync.Mutex
	us map[string][]int64
}

// OnBrokerE2E records one request's time on the wire, by API.
func (l *latencies) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if e2e.WriteErr != nil || e2e.ReadErr != nil {
		return
	}
	name := map[int16]string{0: "produce", 1: "fetch"}[key]
	if name == "" {
		return
	}
	l.mu.Lock()
	l.us[name] = append(l.us[name], (e2e.TimeToWrite + e2e.ReadWait + e2e.TimeToRead).Microseconds())
	l.mu.Unlock()
}

var _ kgo.HookBrokerE2E = (*latencies)(nil)

func percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return -1
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

func bench(args []string) {
	bootstrap, topic := args[0], args[1]
	seconds, _ := strconv.Atoi(args[2])
	producers, _ := strconv.Atoi(args[3])
	rate, _ := strconv.Atoi(args[4])
	ctx := context.Background()
	lat := &latencies{us: map[string][]int64{}}
	admin, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	must(err)
	adm := kadm.NewClient(admin)
	_, err = adm.CreateTopic(ctx, int32(producers), 1, nil, topic)
	must(err)
	time.Sleep(500 * time.Millisecond)
	admin.Close()

	value := benchValue(os.Getenv("KWIRE_BENCH_JSON") != "")
	var produced, consumed, consumedBytes atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		opts := []kgo.Opt{}
		if os.Getenv("KWIRE_BENCH_DEBUG") != "" {
			opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil)))
		}
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(bootstrap), kgo.WithHooks(lat),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(2000))...)
		must(err)
		wg.Add(1)
		go func(p int, cl *kgo.Client) {
			defer wg.Done()
			defer cl.Close()
			began := time.Now()
			for i := 0; ; i++ {
				select {
				case <-stop:
					fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
					_ = cl.Flush(fctx)
					cancel()
					return
				default:
				}
				if rate > 0 {
					due := began.Add(time.Duration(float64(i) * float64(time.Second) / float64(rate)))
					if wait := time.Until(due); wait > 0 {
						time.Sleep(wait)
					}
				}
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: value}, func(_ *kgo.Record, err error) {
					if err == nil {
						produced.Add(1)
					}
				})
			}
		}(p, cl)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.WithHooks(lat), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	must(err)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := cons.PollFetches(pctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) {
				consumed.Add(1)
				consumedBytes.Add(int64(len(r.Value)))
			})
		}
	}()
	start := time.Now()
	time.Sleep(time.Duration(seconds) * time.Second)
	close(stop)
	elapsed := time.Since(start).Seconds()
	wg.Wait()
	cons.Close()

	out := map[string]any{
		"seconds":               elapsed,
		"produced_records":      produced.Load(),
		"consumed_records":      consumed.Load(),
		"produce_mb_per_s":      float64(produced.Load()) * 1024 / 1e6 / elapsed,
		"consume_mb_per_s":      float64(consumedBytes.Load()) / 1e6 / elapsed,
		"produce_records_per_s": float64(produced.Load()) / elapsed,
		"rate_records_per_s":    rate * producers,
	}
	requests := 0
	for name, us := range lat.us {
		sort.Slice(us, func(i, j int) bool { return us[i] < us[j] })
		out[name+"_requests"] = len(us)
		out[name+"_p50_us"] = percentile(us, 0.50)
		out[name+"_p99_us"] = percentile(us, 0.99)
		requests += len(us)
	}
	out["requests"] = requests
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}

// benchValue is the 1,024-byte value every record carries: letters, or (asJSON) one JSON
// document of the shape services produce (objects, arrays, numbers, strings with escapes,
// booleans, null), so that a proxy validating JSON reads every kind of token.
func benchValue(asJSON bool) []byte {
	if !asJSON {
		value := make([]byte, 1024)
		for i := range value {
			value[i] = byte('a' + i%26)
		}
		return value
	}
	var b strings.Builder
	b.WriteString(`{"order_id":"ord-000123","customer":{"id":48151623,"name":"Ada \"A\" Lovelace","vip":true},"items":[`)
	for i := 0; b.Len() < 900; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"sku":"SKU-%05d","qty":%d,"price":%d.%02d,"gift":%t,"note":null}`, i*37, i%5+1, 10+i, i*7%100, i%3 == 0)
	}
	b.WriteString(`],"pad":"`)
	for b.Len() < 1022 {
		b.WriteString("x")
	}
	b.WriteString(`"}`)
	return []byte(b.String())
}
