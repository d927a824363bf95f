package main

// Request latency without a client library: ApiVersions v3 requests one at a time on one
// connection, timed from writing the request to reading the whole response. Used by
// benches/proxy.sh to isolate what the proxy adds to a round trip.
//
// Usage: go-client ping BOOTSTRAP COUNT

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"time"
)

func ping(args []string) {
	count, _ := strconv.Atoi(args[1])
	conn, err := net.Dial("tcp", args[0])
	must(err)
	defer conn.Close()
	// ApiVersions v3: header v2 (key 18, version 3, correlation id, client id "ping", no
	// tags), body: client software name "kwire", version "0.1", no tags.
	body := []byte{0, 18, 0, 3, 0, 0, 0, 0, 0, 4, 'p', 'i', 'n', 'g', 0, 6, 'k', 'w', 'i', 'r', 'e', 4, '0', '.', '1', 0}
	frame := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(frame, uint32(len(body)))
	copy(frame[4:], body)
	resp := make([]byte, 1<<16)
	us := make([]int64, 0, count)
	for i := 0; i < count; i++ {
		binary.BigEndian.PutUint32(frame[8:], uint32(i))
		start := time.Now()
		_, err := conn.Write(frame)
		must(err)
		_, err = io.ReadFull(conn, resp[:4])
		must(err)
		n := binary.BigEndian.Uint32(resp[:4])
		_, err = io.ReadFull(conn, resp[:n])
		must(err)
		us = append(us, time.Since(start).Microseconds())
	}
	sort.Slice(us, func(i, j int) bool { return us[i] < us[j] })
	out := map[string]any{
		"requests": count,
		"p50_us":   percentile(us, 0.50),
		"p99_us":   percentile(us, 0.99),
		"p999_us":  percentile(us, 0.999),
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
