package sluice_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// This example reads the changes a table made after a snapshot, batch by
// batch, and checkpoints at complete snapshots.
func Example() {
	ctx := context.Background()
	c, err := sluice.Dial(ctx, "grpc://127.0.0.1:8815")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	from := int64(1234) // the last snapshot processed, from a checkpoint
	r, err := c.Changes(ctx, sluice.ChangeRequest{
		Table:        "demo.orders",
		FromSnapshot: &from,
		Columns:      []string{"order_id", "country", "amount"},
		Filter:       "country = 'SE'",
	})
	if err != nil {
		log.Fatal(err) // for example NotFound for an unknown table
	}
	defer r.Release()

	for b, err := range r.All() {
		if err != nil {
			// The feed is incomplete: keep the last checkpoint and retry.
			log.Fatal(err)
		}
		ops := b.Record.Column(0).(*array.String)
		for i := range int(b.Record.NumRows()) {
			fmt.Println(ops.Value(i), b.Meta.Snapshot)
		}
		if b.Meta.SnapshotComplete {
			from = b.Meta.Snapshot // every change of the snapshot has been seen
		}
	}
	fmt.Println("checkpoint at snapshot", from)
}

// This example connects over TLS with a token and reads with Next.
func ExampleDial() {
	ctx := context.Background()
	c, err := sluice.Dial(ctx, "grpc+tls://sluice.example.com:443", sluice.WithToken("my-token"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	r, err := c.Changes(ctx, sluice.ChangeRequest{Table: "demo.orders", Compression: "zstd"})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Release()
	rows := int64(0)
	for r.Next() {
		b := r.Batch() // b.Record is valid until the next call to Next
		rows += b.Record.NumRows()
	}
	if err := r.Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(rows, "changes")
}

// This example authenticates with a user name and password (a server
// started with --auth-mode basic): the client runs Flight's Handshake and
// renews its token before each expires.
func ExampleWithBasicAuth() {
	ctx := context.Background()
	c, err := sluice.Dial(ctx, "grpc+tls://sluice.example.com:443",
		sluice.WithBasicAuth("alice", os.Getenv("SLUICE_PASSWORD")))
	if sluice.Code(err) == codes.Unauthenticated {
		log.Fatal("wrong user name or password")
	} else if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	seq, err := c.CommitSeq(ctx, "demo.orders")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("commit", seq.CommitSeq)
}

// This example polls a table's commit sequence and reads each new commit
// once it lands.
func ExampleClient_CommitSeq() {
	ctx := context.Background()
	c, err := sluice.Dial(ctx, sluice.DefaultAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	const table = "demo.orders"
	last, err := c.CommitSeq(ctx, table)
	if err != nil {
		log.Fatal(err)
	}
	for range time.Tick(time.Second) {
		cur, err := c.CommitSeq(ctx, table)
		if err != nil {
			log.Fatal(err)
		}
		if cur.CommitSeq == last.CommitSeq {
			continue // no new commit
		}
		r, err := c.Changes(ctx, sluice.ChangeRequest{Table: table, FromSnapshot: last.Snapshot,
			ToSnapshot: cur.Snapshot})
		if err != nil {
			log.Fatal(err)
		}
		for b, err := range r.All() {
			if err != nil {
				log.Fatal(err)
			}
			fmt.Println(b.Meta.Rows, "changes in snapshot", b.Meta.Snapshot)
		}
		r.Release()
		last = cur
	}
}

// A CommitSeq prints its snapshot id, not the address of the optional
// id: <nil> for a table without snapshots.
func ExampleCommitSeq_String() {
	snap := int64(3055729675574597004)
	fmt.Println(sluice.CommitSeq{Table: "demo.orders", CommitSeq: 7, Snapshot: &snap, TimestampMs: 1767225600000})
	fmt.Printf("%v\n", sluice.CommitSeq{Table: "demo.empty"})
	// Output:
	// {Table:demo.orders CommitSeq:7 Snapshot:3055729675574597004 TimestampMs:1767225600000 Ref:<nil>}
	// {Table:demo.empty CommitSeq:0 Snapshot:<nil> TimestampMs:0 Ref:<nil>}
}

// This example shows how the server would read a window, without reading
// it.
func ExampleClient_Explain() {
	ctx := context.Background()
	c, err := sluice.Dial(ctx, sluice.DefaultAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	p, err := c.Explain(ctx, sluice.ChangeRequest{Table: "demo.orders", Filter: "amount > 100"})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range p.Snapshots {
		fmt.Printf("snapshot %d (%s): %s, %d files, %d bytes\n", s.Snapshot, s.Operation, s.Strategy,
			len(s.Files), s.BytesRead)
	}
	fmt.Printf("total: %d files read, %d skipped\n", p.FilesRead, p.FilesSkipped)
}

// This example tells apart the failures a consumer handles differently.
func ExampleCode() {
	ctx := context.Background()
	c, err := sluice.Dial(ctx, sluice.DefaultAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	from := int64(1234)
	r, err := c.Changes(ctx, sluice.ChangeRequest{Table: "demo.orders", FromSnapshot: &from})
	switch sluice.Code(err) {
	case codes.OK:
		defer r.Release()
	case codes.NotFound:
		log.Fatal("no such table or snapshot: ", err)
	case codes.FailedPrecondition:
		log.Fatal("the history after the checkpoint is gone; re-read the table: ", err)
	case codes.InvalidArgument:
		log.Fatal("bad request: ", err)
	default:
		log.Fatal(err)
	}
}

// This example follows a table as a durable consumer: it resumes after its
// last acknowledged checkpoint, applies each change idempotently and
// acknowledges every complete snapshot.
func ExampleClient_Subscribe() {
	ctx := context.Background()
	c, err := sluice.Dial(ctx, "grpc://127.0.0.1:8815")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	for {
		sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{
			Table:    "demo.orders",
			Consumer: "orders-mirror",
			Start:    sluice.StartLatestFull, // for a consumer without progress
			Columns:  []string{"order_id", "status"},
		})
		if err != nil {
			log.Fatal(err)
		}
		for b, err := range sub.All() {
			if err != nil {
				// Unavailable: the server restarted; subscribe again and
				// resume after the last ack (at-least-once).
				log.Print(err)
				break
			}
			_ = b.Record // apply the changes, idempotently
			if b.Meta.SnapshotComplete {
				if _, err := sub.Ack(ctx); err != nil {
					log.Print(err)
				}
			}
		}
		sub.Release()
		time.Sleep(time.Second)
	}
}

// A durable consumer of a branch (write-audit-publish's audit branch): its
// progress is the branch's, apart from a consumer of the same id on main;
// OnRef names it in the calls about consumers.
func ExampleOnRef() {
	ctx := context.Background()
	c, err := sluice.Dial(ctx, "grpc://127.0.0.1:8815")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: "demo.orders", Ref: "audit", Consumer: "auditor",
		Start: sluice.StartLatest})
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Release()
	for b, err := range sub.All() {
		if err != nil {
			log.Fatal(err)
		}
		if b.Meta.SnapshotComplete {
			if _, err := sub.Ack(ctx); err != nil { // acknowledged on audit
				log.Fatal(err)
			}
			break
		}
	}
	p, err := c.ConsumerProgress(ctx, "auditor", "demo.orders", sluice.OnRef("audit"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Ref, p.Snapshot, p.LagCommits) // the lag on the branch
}
