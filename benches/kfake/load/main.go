// The load of benches/kfake.sh, run against one broker process: create a topic, produce
// RECORDS records (acks=all, idempotent, as franz-go does by default) as fast as the
// client can, then consume them all in a new consumer group, and check every record.
//
// Usage: kfake-load BOOTSTRAP BROKER_PID TOPIC RECORDS VALUE_BYTES PARTITIONS BATCH_BYTES
//
// Record i has no key and a value of VALUE_BYTES bytes: i (8 bytes, big-endian) and then a
// slice of a fixed pseudo-random block that starts at i mod 251. The consumer checks each
// value byte for byte, that every index comes back exactly once, and that the indexes of
// each partition increase; any loss, duplicate, reordering or damage fails the run (exit 1)
// so that a broker that drops records cannot look fast.
//
// The broker's CPU time (utime + stime from /proc/BROKER_PID/stat, in clock ticks) is read
// before and after each phase, and its VmRSS and VmHWM from /proc/BROKER_PID/status; the
// result is one JSON line on stdout, with this process's own CPU time per phase
// (getrusage), to show how much of the two cores the client took.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const clockTicks = 100 // USER_HZ on Linux

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kfake-load: "+format+"\n", args...)
	os.Exit(1)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		fail("not a positive number: %q", s)
	}
	return n
}

// cpuSeconds is the broker's user + system time so far.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		fail("broker stat: %v", err)
	}
	s := string(b)
	// Fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / clockTicks
}

// selfCPU is this process's user + system time so far.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// memKiB reads a "VmXXX:" line of the broker's /proc status.
func memKiB(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		fail("broker status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			v, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return v
		}
	}
	fail("no %s in the broker's status", field)
	return 0
}

func main() {
	if len(os.Args) != 8 {
		fail("usage: kfake-load BOOTSTRAP BROKER_PID TOPIC RECORDS VALUE_BYTES PARTITIONS BATCH_BYTES")
	}
	bootstrap, topic := os.Args[1], os.Args[3]
	pid, records, valueBytes := atoi(os.Args[2]), atoi(os.Args[4]), atoi(os.Args[5])
	partitions, batchBytes := atoi(os.Args[6]), atoi(os.Args[7])
	if valueBytes < 8 {
		fail("VALUE_BYTES must be at least 8")
	}
	ctx := context.Background()

	// The fixed block the values are cut from.
	block := make([]byte, valueBytes+251)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range block {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		block[i] = byte(x)
	}
	tail := func(i int) []byte { return block[i%251 : i%251+valueBytes-8] }

	admin, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		fail("client: %v", err)
	}
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, int32(partitions), 1, nil, topic); err != nil {
		fail("create topic: %v", err)
	}
	admin.Close()
	rssStart := memKiB(pid, "VmRSS")

	// Produce: acks=all and idempotence are franz-go's defaults; batches up to BATCH_BYTES,
	// franz-go's default linger (10 ms) and buffer (50,000 records).
	cpu0, self0 := cpuSeconds(pid), selfCPU()
	start := time.Now()
	prod, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(int32(batchBytes)),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	if err != nil {
		fail("producer: %v", err)
	}
	var (
		mu      sync.Mutex
		prodErr error
	)
	for i := 0; i < records; i++ {
		v := make([]byte, valueBytes)
		binary.BigEndian.PutUint64(v, uint64(i))
		copy(v[8:], tail(i))
		prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if prodErr == nil {
					prodErr = err
				}
				mu.Unlock()
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		fail("flush: %v", err)
	}
	produceSecs := time.Since(start).Seconds()
	prod.Close()
	if prodErr != nil {
		fail("produce: %v", prodErr)
	}
	cpu1, self1 := cpuSeconds(pid), selfCPU()
	rssProduced := memKiB(pid, "VmRSS")

	// Consume in a new group from the start, until every record is back; a minute without
	// a record is a failure.
	start = time.Now()
	cons, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.ConsumerGroup(topic+"-group"),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		fail("consumer: %v", err)
	}
	seen := make([]bool, records)
	last := make(map[int32]int)
	got := 0
	var firstRecord time.Duration
	for got < records {
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		fetches := cons.PollFetches(pctx)
		timedOut := pctx.Err() != nil
		cancel()
		if timedOut {
			fail("consumed %d of %d records, then nothing for a minute", got, records)
		}
		fetches.EachError(func(t string, p int32, err error) { fail("fetch %s/%d: %v", t, p, err) })
		fetches.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != valueBytes {
				fail("partition %d offset %d: value of %d bytes", r.Partition, r.Offset, len(r.Value))
			}
			i := int(binary.BigEndian.Uint64(r.Value))
			if i < 0 || i >= records || !bytes.Equal(r.Value[8:], tail(i)) {
				fail("partition %d offset %d: a value that was not produced", r.Partition, r.Offset)
			}
			if seen[i] {
				fail("record %d consumed twice (partition %d offset %d)", i, r.Partition, r.Offset)
			}
			if prev, ok := last[r.Partition]; ok && prev > i {
				fail("partition %d: record %d after record %d", r.Partition, i, prev)
			}
			if got == 0 {
				firstRecord = time.Since(start)
			}
			seen[i] = true
			last[r.Partition] = i
			got++
		})
	}
	consumeSecs := time.Since(start).Seconds()
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		fail("commit: %v", err)
	}
	cons.Close()
	cpu2, self2 := cpuSeconds(pid), selfCPU()

	out, _ := json.Marshal(map[string]any{
		"records":              records,
		"value_bytes":          valueBytes,
		"partitions":           partitions,
		"batch_bytes":          batchBytes,
		"produce_s":            produceSecs,
		"consume_s":            consumeSecs,
		"first_record_s":       firstRecord.Seconds(),
		"broker_cpu_produce_s": cpu1 - cpu0,
		"broker_cpu_consume_s": cpu2 - cpu1,
		"load_cpu_produce_s":   self1 - self0,
		"load_cpu_consume_s":   self2 - self1,
		"rss_start_kib":        rssStart,
		"rss_produced_kib":     rssProduced,
		"hwm_kib":              memKiB(pid, "VmHWM"),
		"checked":              got,
	})
	fmt.Println(string(out))
}
