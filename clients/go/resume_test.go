package sluice

import "testing"

// Where a reconnect resumes, batch after batch: as first asked until
// something came; inside a full state, that full state again; after a
// complete snapshot or a heartbeat, the changes after it.
func TestResumePoint(t *testing.T) {
	ts := int64(5)
	s := &Subscription{req: SubscribeRequest{Table: "a.b", Consumer: "c", Start: StartLatestFull,
		FromTimestampMs: &ts}, deliveredSeq: -1}
	steps := []struct {
		meta      BatchMeta
		start     string
		snapshot  int64
		delivered int64
	}{
		{BatchMeta{Snapshot: -1, Heartbeat: true}, StartLatestFull, 0, -1}, // before the first snapshot
		{BatchMeta{Snapshot: 10, CommitSeq: 3, FullState: true}, StartFromSnapshotFull, 10, 3},
		{BatchMeta{Snapshot: 10, CommitSeq: 3, FullState: true}, StartFromSnapshotFull, 10, 3},
		{BatchMeta{Snapshot: 10, CommitSeq: 3, FullState: true, SnapshotComplete: true}, StartFromSnapshot, 10, 3},
		{BatchMeta{Snapshot: 11, CommitSeq: 4}, StartFromSnapshot, 10, 4}, // a snapshot in the middle
		{BatchMeta{Snapshot: 11, CommitSeq: 4, SnapshotComplete: true}, StartFromSnapshot, 11, 4},
		{BatchMeta{Snapshot: 12, CommitSeq: 5, Heartbeat: true}, StartFromSnapshot, 12, 4},
	}
	for i, st := range steps {
		s.track(st.meta)
		req := s.request()
		if req.Start != st.start || s.deliveredSeq != st.delivered {
			t.Fatalf("step %d (%+v): start %q, delivered %d; want %q, %d", i, st.meta, req.Start, s.deliveredSeq,
				st.start, st.delivered)
		}
		if st.start == StartLatestFull {
			if req.FromSnapshot != nil || req.FromTimestampMs != &ts {
				t.Fatalf("step %d: the first request changed: %+v", i, req)
			}
			continue
		}
		if req.FromSnapshot == nil || *req.FromSnapshot != st.snapshot || req.FromTimestampMs != nil ||
			req.Consumer != "c" {
			t.Fatalf("step %d: request %+v, want from snapshot %d", i, req, st.snapshot)
		}
	}
}
