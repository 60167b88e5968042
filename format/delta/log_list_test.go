package delta

import (
	"reflect"
	"testing"
)

func TestParseLogName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want *logName // nil: ignored
	}{
		{"00000000000000000007.json", &logName{version: 7, commit: true}},
		{"00000000000000000010.checkpoint.parquet", &logName{version: 10, checkpoint: true, kind: checkpointClassic}},
		{"00000000000000000010.checkpoint.0000000002.0000000003.parquet", &logName{version: 10, checkpoint: true, kind: checkpointMultiPart, part: 2, parts: 3}},
		{"00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json", &logName{version: 10, checkpoint: true, kind: checkpointUUID}},
		{"00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.parquet", &logName{version: 10, checkpoint: true, kind: checkpointUUID}},
		{"00000000000000000004.00000000000000000006.compacted.json", nil},
		{"00000000000000000004.crc", nil},
		{".00000000000000000004.json.crc", nil},
		{"_last_checkpoint", nil},
		{"0000000000000000007.json", nil},                                      // 19 digits
		{"000000000000000000007.json", nil},                                    // 21 digits
		{"0000000000000000000a.json", nil},                                     // not a number
		{"99999999999999999999.json", nil},                                     // beyond int64
		{"00000000000000000010.checkpoint.0000000004.0000000003.parquet", nil}, // part > parts
		{"00000000000000000010.checkpoint.0000000000.0000000003.parquet", nil}, // part 0
		{"00000000000000000010.checkpoint.000000001.0000000003.parquet", nil},  // 9 digits
		{"00000000000000000010.checkpoint.80a083e8-7026-4e79-81be.json", nil},  // short uuid
		{"00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.avro", nil},
		{"00000000000000000010.checkpoint.json", nil},
		{"00000000000000000010.json.tmp", nil},
		{"00000000000000000010.json.crc", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseLogName(tc.name)
			if tc.want == nil {
				if ok {
					t.Errorf("parsed as %+v, want ignored", got)
				}
				return
			}
			if !ok || got != *tc.want {
				t.Errorf("parseLogName = %+v, %v; want %+v", got, ok, *tc.want)
			}
		})
	}
}

func TestChooseCheckpoint(t *testing.T) {
	const (
		classic = "00000000000000000005.checkpoint.parquet"
		uuidA   = "00000000000000000005.checkpoint.0a0a0a0a-7026-4e79-81be-64bd76c43a11.json"
		uuidB   = "00000000000000000005.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.parquet"
	)
	part := func(o, p int) string {
		return "00000000000000000005.checkpoint." + pad10(o) + "." + pad10(p) + ".parquet"
	}
	for _, tc := range []struct {
		name  string
		files []string
		want  []string // nil: none complete
	}{
		{"classic", []string{classic}, []string{classic}},
		{"complete multi-part over classic", []string{classic, part(1, 2), part(2, 2)}, []string{part(1, 2), part(2, 2)}},
		{"incomplete multi-part", []string{part(1, 3), part(3, 3)}, nil},
		{"incomplete multi-part, classic", []string{classic, part(1, 3), part(2, 3)}, []string{classic}},
		{"more parts win", []string{part(1, 2), part(1, 3), part(2, 2), part(2, 3), part(3, 3)}, []string{part(1, 3), part(2, 3), part(3, 3)}},
		{"complete fewer parts over incomplete more", []string{part(1, 2), part(1, 3), part(2, 2), part(3, 3)}, []string{part(1, 2), part(2, 2)}},
		{"UUID over all", []string{classic, part(1, 1), uuidA}, []string{uuidA}},
		{"greatest UUID name", []string{uuidB, uuidA}, []string{uuidB}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var files []checkpointFile
			for _, f := range tc.files {
				n, ok := parseLogName(f)
				if !ok {
					t.Fatalf("%s not parsed", f)
				}
				files = append(files, checkpointFile{logName: n, name: logDir + "/" + f})
			}
			cp := chooseCheckpoint(files)
			if tc.want == nil {
				if cp != nil {
					t.Errorf("chose %v, want none", cp.files)
				}
				return
			}
			var want []string
			for _, f := range tc.want {
				want = append(want, logDir+"/"+f)
			}
			if cp == nil || !reflect.DeepEqual(cp.files, want) || cp.version != 5 {
				t.Errorf("chose %+v, want %v", cp, want)
			}
		})
	}
}

func pad10(n int) string {
	s := "0000000000" + string(rune('0'+n))
	return s[len(s)-10:]
}

func TestListingEarliestStart(t *testing.T) {
	cps := func(vs ...int64) []*checkpoint {
		var out []*checkpoint
		for _, v := range vs {
			out = append(out, &checkpoint{version: v})
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		commits     []int64
		checkpoints []*checkpoint
		want        int64
		ok          bool
	}{
		{"whole history", []int64{0, 1, 2}, nil, -1, true},
		{"whole history and a checkpoint", []int64{0, 1, 2}, cps(1), -1, true},
		{"cleaned up to a checkpoint", []int64{3, 4, 5}, cps(3), 3, true},
		{"cleaned, commit at the checkpoint gone too", []int64{4, 5}, cps(3), 3, true},
		{"oldest of several checkpoints", []int64{3, 4, 5, 6}, cps(3, 5), 3, true},
		{"checkpoint before a gap does not count", []int64{0, 1, 3, 4}, cps(1), 0, false},
		{"checkpoint after a gap", []int64{0, 1, 3, 4, 5}, cps(1, 4), 4, true},
		{"checkpoint right before the run", []int64{0, 1, 3, 4}, cps(2), 2, true},
		{"no checkpoint, no commit 0", []int64{2, 3}, nil, 0, false},
		{"only a checkpoint", nil, cps(7), 7, true},
		{"checkpoint newer than the last commit", []int64{0, 1}, cps(2), 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &listing{commits: tc.commits, checkpoints: tc.checkpoints}
			got, ok := l.earliestStart()
			if ok != tc.ok || (ok && got != tc.want) {
				t.Errorf("earliestStart = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestListingHasCommits(t *testing.T) {
	l := &listing{commits: []int64{3, 4, 5, 7, 8}}
	for _, tc := range []struct {
		from, to int64
		want     bool
		missing  int64
	}{
		{3, 5, true, 0}, {4, 4, true, 0}, {7, 8, true, 0}, {6, 5, true, 0},
		{2, 4, false, 2}, {5, 7, false, 6}, {8, 9, false, 9}, {0, 0, false, 0}, {9, 9, false, 9},
	} {
		if got := l.hasCommits(tc.from, tc.to); got != tc.want {
			t.Errorf("hasCommits(%d, %d) = %v", tc.from, tc.to, got)
		}
		if !tc.want {
			if got := l.missingCommit(tc.from, tc.to); got != tc.missing {
				t.Errorf("missingCommit(%d, %d) = %d, want %d", tc.from, tc.to, got, tc.missing)
			}
		}
	}
}
