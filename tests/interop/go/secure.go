package main

// franz-go over SASL/SCRAM and TLS, for tests/broker_scram_clients.rs: produces 5 records to
// PREFIX-t (created by Metadata) and consumes them in group PREFIX-g; prints one JSON
// object {"client", "produced", "consumed", "errors"}, as tests/proxy/tls_client.py does.
//
// Usage: go-client secure BOOTSTRAP PREFIX CAFILE|-
//
// CAFILE (PEM) turns TLS on, checked against it and the host name; "-" is plaintext.
// KWIRE_SASL_MECHANISM (SCRAM-SHA-256 or SCRAM-SHA-512), KWIRE_SASL_USER and
// KWIRE_SASL_PASSWORD (from the environment, never the command line) turn SCRAM on.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func secure(args []string) {
	bootstrap, prefix, cafile := args[0], args[1], args[2]
	topic, group := prefix+"-t", prefix+"-g"
	out := map[string]any{"client": "franz-go", "produced": []string{}, "consumed": []string{}, "errors": []string{}}
	errs := []string{}
	opts := []kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.AllowAutoTopicCreation(), kgo.RequestRetries(3),
		kgo.RetryTimeout(15 * time.Second)}
	if cafile != "-" {
		pem, err := os.ReadFile(cafile)
		must(err)
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			must(fmt.Errorf("no certificate in %s", cafile))
		}
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "localhost"}))
	}
	if m := os.Getenv("KWIRE_SASL_MECHANISM"); m != "" {
		auth := scram.Auth{User: os.Getenv("KWIRE_SASL_USER"), Pass: os.Getenv("KWIRE_SASL_PASSWORD")}
		switch m {
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(auth.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(auth.AsSha512Mechanism()))
		default:
			must(fmt.Errorf("mechanism %s", m))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	producer, err := kgo.NewClient(append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))...)
	must(err)
	// A failed authentication is retried by the client: a ping with a deadline reports it.
	pingCtx, pingCancel := context.WithTimeout(ctx, 5*time.Second)
	if err := producer.Ping(pingCtx); err != nil {
		errs = append(errs, err.Error())
	}
	pingCancel()
	produced := []string{}
	for i := 0; i < 5 && len(errs) == 0; i++ {
		v := fmt.Sprintf("%s-%d", prefix, i)
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			errs = append(errs, err.Error())
			break
		}
		produced = append(produced, v)
	}
	producer.Close()
	consumed := []string{}
	if len(errs) == 0 {
		consumer, err := kgo.NewClient(append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		must(err)
		for len(consumed) < len(produced) && ctx.Err() == nil {
			fetches := consumer.PollFetches(ctx)
			fetches.EachError(func(_ string, _ int32, err error) {
				if ctx.Err() == nil {
					errs = append(errs, err.Error())
				}
			})
			fetches.EachRecord(func(r *kgo.Record) { consumed = append(consumed, string(r.Value)) })
			if len(errs) > 0 {
				break
			}
		}
		consumer.Close()
	}
	out["produced"], out["consumed"], out["errors"] = produced, consumed, errs
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	if len(errs) > 0 {
		os.Exit(1)
	}
}
