package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestKill9Streams kills the server with SIGKILL while clients XADD to
// streams and consume them through a consumer group (XREADGROUP, then
// XACK), then restarts it: every acknowledged XADD's entry is there, no
// entry past the last one sent is, every acknowledged XACK's id has left
// the pending entries list, and the PEL agrees with itself (the group's
// count, each consumer's list, the last delivered id).
func TestKill9Streams(t *testing.T) {
	for _, mode := range []string{"always", "no"} {
		t.Run(mode, func(t *testing.T) {
			srv, args := startFresh(t, mode)
			ctx := context.Background()

			const writers = 4
			type progress struct {
				sent, added int      // XADDs sent, acknowledged (entry n is n+1-0)
				acked       []string // ids whose XACK was acknowledged
			}
			prog := make([]progress, writers)
			srv.killMidWrites(t, writers, 400, func(w int) func() (int64, error) {
				rc := srv.client(t)
				key := fmt.Sprintf("w%d:stream", w)
				if err := rc.XGroupCreateMkStream(ctx, key, "g", "0").Err(); err != nil {
					t.Fatal(err)
				}
				p := &prog[w]
				return func() (int64, error) {
					p.sent++
					id := strconv.Itoa(p.sent) + "-0"
					if err := rc.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: id, Values: []string{"n", id}}).Err(); err != nil {
						return 0, err
					}
					p.added++
					if p.added%2 == 0 {
						return 1, nil
					}
					read, err := rc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c" + strconv.Itoa(p.added%3),
						Streams: []string{key, ">"}, Count: 1}).Result()
					if err != nil {
						return 1, err
					}
					got := read[0].Messages[0].ID
					if err := rc.XAck(ctx, key, "g", got).Err(); err != nil {
						return 1, err
					}
					p.acked = append(p.acked, got)
					return 2, nil
				}
			})

			rc := startChild(t, args...).client(t)
			checked := 0
			for w, p := range prog {
				key := fmt.Sprintf("w%d:stream", w)
				entries, err := rc.XRange(ctx, key, "-", "+").Result()
				if err != nil {
					t.Fatalf("%s after restart: %v", key, err)
				}
				if len(entries) < p.added || len(entries) > p.sent {
					t.Fatalf("%s: %d entries after kill -9; %d were acknowledged, %d sent", key, len(entries), p.added, p.sent)
				}
				for i, e := range entries {
					if want := strconv.Itoa(i+1) + "-0"; e.ID != want || e.Values["n"] != want {
						t.Fatalf("%s: entry %d is %s %v, want %s", key, i, e.ID, e.Values, want)
					}
				}
				pending, err := rc.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: key, Group: "g", Start: "-", End: "+", Count: 1 << 20}).Result()
				if err != nil {
					t.Fatal(err)
				}
				pendingIDs := map[string]string{}
				perConsumer := map[string]int64{}
				for _, pe := range pending {
					pendingIDs[pe.ID] = pe.Consumer
					perConsumer[pe.Consumer]++
				}
				for _, id := range p.acked {
					if _, ok := pendingIDs[id]; ok {
						t.Fatalf("%s: acknowledged XACK of %s undone by kill -9", key, id)
					}
				}
				summary, err := rc.XPending(ctx, key, "g").Result()
				if err != nil {
					t.Fatal(err)
				}
				if summary.Count != int64(len(pending)) {
					t.Fatalf("%s: XPENDING counts %d, lists %d", key, summary.Count, len(pending))
				}
				for cons, n := range perConsumer {
					own, err := rc.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: key, Group: "g", Start: "-", End: "+", Count: 1 << 20, Consumer: cons}).Result()
					if err != nil {
						t.Fatal(err)
					}
					if int64(len(own)) != n || summary.Consumers[cons] != n {
						t.Fatalf("%s: consumer %s owns %d pending, its list has %d, the summary says %d", key, cons, n, len(own), summary.Consumers[cons])
					}
				}
				groups, err := rc.XInfoGroups(ctx, key).Result()
				if err != nil {
					t.Fatal(err)
				}
				if len(groups) != 1 || groups[0].Pending != int64(len(pending)) {
					t.Fatalf("%s: XINFO GROUPS %+v, %d pending listed", key, groups, len(pending))
				}
				last := groups[0].LastDeliveredID
				for id := range pendingIDs {
					if streamIDLess(last, id) {
						t.Fatalf("%s: %s is pending but the group delivered only up to %s", key, id, last)
					}
				}
				checked += len(entries) + len(p.acked)
			}
			if checked == 0 {
				t.Fatal("nothing was acknowledged before the kill")
			}
			t.Logf("appendfsync %s: %d entries and acks checked after kill -9", mode, checked)
		})
	}
}

// streamIDLess compares two ids "ms-seq".
func streamIDLess(a, b string) bool {
	parse := func(s string) (ms, seq uint64) {
		fmt.Sscanf(s, "%d-%d", &ms, &seq)
		return
	}
	ams, aseq := parse(a)
	bms, bseq := parse(b)
	return ams < bms || ams == bms && aseq < bseq
}

// TestKill9StreamTrim kills the server with SIGKILL while clients add to
// streams of 4-entry nodes capped by XADD … MAXLEN (exact and "~") and
// trimmed by XTRIM … MINID, so that trims, node records and the first id
// move in every batch, then restarts it: each stream is a run of
// consecutive ids that ends at or after the last acknowledged add, no
// longer than the caps allow, whose length, first id and node records
// agree (XLEN, XINFO STREAM, and trimming it to nothing and beyond).
func TestKill9StreamTrim(t *testing.T) {
	const capLen = 30
	for _, mode := range []string{"always", "no"} {
		t.Run(mode, func(t *testing.T) {
			srv, args := startFresh(t, mode)
			ctx := context.Background()
			if err := srv.client(t).ConfigSet(ctx, "stream-node-max-entries", "4").Err(); err != nil {
				t.Fatal(err)
			}
			const writers = 4
			type progress struct{ sent, added int } // entry n is n-0
			prog := make([]progress, writers)
			srv.killMidWrites(t, writers, 400, func(w int) func() (int64, error) {
				rc := srv.client(t)
				key := fmt.Sprintf("w%d:capped", w)
				p := &prog[w]
				return func() (int64, error) {
					p.sent++
					id := strconv.Itoa(p.sent) + "-0"
					a := &redis.XAddArgs{Stream: key, ID: id, Values: []string{"n", id}, MaxLen: capLen, Approx: p.sent%2 == 0}
					if err := rc.XAdd(ctx, a).Err(); err != nil {
						return 0, err
					}
					p.added++
					if p.sent%7 == 0 && p.sent > capLen/2 { // a negative MINID is an invalid id
						if err := rc.XTrimMinID(ctx, key, strconv.Itoa(p.sent-capLen/2)+"-0").Err(); err != nil {
							return 1, err
						}
					}
					return 1, nil
				}
			})

			rc := startChild(t, args...).client(t)
			for w, p := range prog {
				key := fmt.Sprintf("w%d:capped", w)
				entries, err := rc.XRange(ctx, key, "-", "+").Result()
				if err != nil {
					t.Fatalf("%s after restart: %v", key, err)
				}
				if len(entries) == 0 || len(entries) > capLen+4 {
					t.Fatalf("%s: %d entries after kill -9, cap %d", key, len(entries), capLen)
				}
				var first int
				fmt.Sscanf(entries[0].ID, "%d-0", &first)
				for i, e := range entries {
					if want := strconv.Itoa(first+i) + "-0"; e.ID != want || e.Values["n"] != want {
						t.Fatalf("%s: entry %d is %s %v, want %s", key, i, e.ID, e.Values, want)
					}
				}
				if last := first + len(entries) - 1; last < p.added || last > p.sent {
					t.Fatalf("%s: last entry %d after kill -9; %d adds acknowledged, %d sent", key, last, p.added, p.sent)
				}
				info, err := rc.XInfoStream(ctx, key).Result()
				if err != nil {
					t.Fatal(err)
				}
				if info.Length != int64(len(entries)) || info.FirstEntry.ID != entries[0].ID || info.RecordedFirstEntryID != entries[0].ID {
					t.Fatalf("%s: XINFO STREAM says length %d, first %s (recorded %s); XRANGE has %d from %s",
						key, info.Length, info.FirstEntry.ID, info.RecordedFirstEntryID, len(entries), entries[0].ID)
				}
				// Trimming walks the node records: whole-node trims by
				// length and id, then everything.
				if err := rc.XTrimMaxLenApprox(ctx, key, 5, 0).Err(); err != nil {
					t.Fatalf("%s: XTRIM after kill -9: %v", key, err)
				}
				if n, err := rc.XTrimMaxLen(ctx, key, 0).Result(); err != nil || rc.XLen(ctx, key).Val() != 0 {
					t.Fatalf("%s: XTRIM MAXLEN 0 after kill -9: %d, %v; XLEN %d", key, n, err, rc.XLen(ctx, key).Val())
				}
			}
		})
	}
}
