// franz-go through `kwire proxy` against Apache Kafka: prints one JSON object.
//
// Usage: go-client BOOTSTRAP PREFIX
//
// Same steps and output as tests/proxy/kafka_python_client.py: topic PREFIX-t with 3
// partitions, its configs, 12 records per codec, a consumer group PREFIX-g with committed
// offsets, groups and latest offsets. tests/proxy/setup.sh builds it into
// target/go-client/; used by tests/proxy.rs.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const perCodec = 12
const partitions = 3

var codecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-client:", err)
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "bench" {
		bench(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "txn" {
		txn(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "secure" {
		secure(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "read" {
		read(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "ping" {
		ping(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "cluster-produce" {
		clusterProduce(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "group848" {
		group848(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "cluster-consume" {
		clusterConsume(os.Args[2:])
		return
	}
	bootstrap, prefix := os.Args[1], os.Args[2]
	topic, group := prefix+"-t", prefix+"-g"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out := map[string]any{"client": "franz-go", "errors": []string{}}
	names := []string{}
	for _, c := range codecs {
		names = append(names, c.name)
	}
	out["codecs"] = names

	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID("franz-go-proxy-test"))
	must(err)
	adm := kadm.NewClient(cl)
	_, err = adm.CreateTopic(ctx, partitions, 1, nil, topic)
	must(err)
	var td kadm.TopicDetails
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		td, err = adm.ListTopics(ctx, topic)
		if err == nil && len(td[topic].Partitions) == partitions {
			break
		}
	}
	must(err)
	out["topic_partitions"] = len(td[topic].Partitions)
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	must(err)
	rc, err := rcs.On(topic, nil)
	must(err)
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && c.Value != nil {
			out["config"] = map[string]string{"cleanup.policy": *c.Value}
		}
	}

	produced := map[string][]string{}
	for p := 0; p < partitions; p++ {
		produced[strconv.Itoa(p)] = []string{}
	}
	for _, c := range codecs {
		pcl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID("franz-go-proxy-test"),
			kgo.ProducerBatchCompression(c.codec), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(5*time.Millisecond))
		must(err)
		var recs []*kgo.Record
		for i := 0; i < perCodec; i++ {
			v := fmt.Sprintf("%s-%d", c.name, i)
			p := i % partitions
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Key: []byte(strconv.Itoa(i)), Value: []byte(v)})
			produced[strconv.Itoa(p)] = append(produced[strconv.Itoa(p)], v)
		}
		must(pcl.ProduceSync(ctx, recs...).FirstErr())
		pcl.Close()
	}
	// One record of 900 KB: a Produce request and a Fetch response far larger than the
	// proxy's first buffer. Listed as "large-<bytes>".
	large := make([]byte, 900_000)
	for i := range large {
		large[i] = byte('a' + i%26)
	}
	lcl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID("franz-go-proxy-test"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	must(err)
	must(lcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: large}).FirstErr())
	lcl.Close()
	produced["0"] = append(produced["0"], fmt.Sprintf("large-%d", len(large)))
	out["extra_records"] = 1
	out["produced"] = produced

	// [offset, value]: a record delivered again after a rebalance shows as such.
	consumed := map[string][][2]any{}
	for p := 0; p < partitions; p++ {
		consumed[strconv.Itoa(p)] = [][2]any{}
	}
	seen := map[[2]int64]bool{}
	ccl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID("franz-go-proxy-test"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	must(err)
	want := perCodec*len(codecs) + 1
	n := 0
	for deadline := time.Now().Add(40 * time.Second); n < want && time.Now().Before(deadline); {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := ccl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			k := strconv.Itoa(int(r.Partition))
			v := string(r.Value)
			if len(r.Value) > 1000 {
				v = fmt.Sprintf("large-%d", len(r.Value))
			}
			consumed[k] = append(consumed[k], [2]any{r.Offset, v})
			seen[[2]int64{int64(r.Partition), r.Offset}] = true
			n = len(seen)
		})
	}
	must(ccl.CommitUncommittedOffsets(ctx))
	ccl.Close()
	out["consumed"] = consumed

	offs, err := adm.FetchOffsets(ctx, group)
	must(err)
	committed := map[string]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			committed[strconv.Itoa(int(o.Partition))] = o.At
		}
	})
	out["committed"] = committed
	groups, err := adm.ListGroups(ctx)
	must(err)
	gl := groups.Groups()
	sort.Strings(gl)
	out["groups"] = gl
	ends, err := adm.ListEndOffsets(ctx, topic)
	must(err)
	latest := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) { latest[strconv.Itoa(int(o.Partition))] = o.Offset })
	out["latest"] = latest
	adm.Close()
	b, err := json.Marshal(out)
	must(err)
	fmt.Println(string(b))
}
