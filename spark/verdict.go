package spark

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Engine names what computes a table's changes.
type Engine string

// The engines.
const (
	// EngineSparkNative is Spark's own CHANGES clause (Spark 4.2 and a
	// connector that implements it: Delta 4.4 with row tracking).
	EngineSparkNative Engine = "spark_native"
	// EngineIcebergChangelogView is Iceberg's create_changelog_view
	// procedure (Spark 4.1 with Iceberg's runtime, tables without delete
	// files).
	EngineIcebergChangelogView Engine = "iceberg_changelog_view"
	// EngineNative is Sluice's own engine reading the table's files.
	EngineNative Engine = "native"
)

// Verdict is the outcome of detecting a table's change engine, reported
// as it is (explain, list_tables, a metric label, a log line): a fallback
// is never silent.
type Verdict struct {
	// Chosen is the engine that serves the table; empty when none does
	// (Detect then returns ErrNoChangeEngine).
	Chosen Engine `json:"chosen"`
	// ServerVersion is the Spark server's version.
	ServerVersion string `json:"server_version"`
	// NativeExpected says that the server's version has CHANGES (4.2 or
	// newer), so that Spark's native engine was expected to serve.
	NativeExpected bool `json:"native_expected"`
	// NativeUsable says that the CHANGES probe over a real range of the
	// table resolved.
	NativeUsable bool `json:"native_usable"`
	// FellBack says that an engine was refused (a probe failed) or that
	// no Spark engine applies, so Chosen is a lesser choice.
	FellBack bool `json:"fell_back"`
	// Reason says why, with Spark's own error text for each refusal.
	Reason string `json:"reason"`
}

// atLeast reports whether version ("4.2.0", "4.2.0-SNAPSHOT") is at least
// major.minor.
func atLeast(version string, major, minor int) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// Detect decides which engine serves table t, by asking the server:
//
//  1. its version (AnalyzePlan SparkVersion);
//  2. at 4.2 or newer, whether CHANGES reads one row (LIMIT 1) over a real
//     range of the table (its latest commit, or w when w is not empty) — a
//     version number is not a capability, and neither is a zero-row probe,
//     which Delta's row-tracking check (at planning) never reaches;
//  3. for an Iceberg table, whether Iceberg's changelog view reads a real,
//     non-empty window (the whole history);
//  4. else the native engine when t.NativeReadable, else none:
//     ErrNoChangeEngine, with the Verdict saying why.
//
// A server that cannot be reached is ErrUnavailable and no verdict: detect
// again later. An unknown table is ErrTableNotFound.
func (s *Session) Detect(ctx context.Context, t Table, w Window) (Verdict, error) {
	v, err := s.Version(ctx)
	if err != nil {
		return Verdict{}, err
	}
	verdict := Verdict{ServerVersion: v, NativeExpected: atLeast(v, 4, 2)}
	var reasons []string
	refused := func(what string, err error) {
		reasons = append(reasons, what+": "+err.Error())
		verdict.FellBack = true
	}
	if verdict.NativeExpected {
		var err error
		if t.Format == Delta {
			err = s.enableDeltaChangelog(ctx)
		}
		if err == nil {
			err = s.probeChanges(ctx, t, w)
		}
		switch {
		case err == nil:
			verdict.NativeUsable = true
			verdict.Chosen = EngineSparkNative
			verdict.Reason = fmt.Sprintf("CHANGES resolves on %s (Spark %s)", t.Name, v)
			s.report(t, verdict)
			return verdict, nil
		case isFatal(err):
			return Verdict{}, err
		default:
			refused("Spark "+v+" refused CHANGES on "+t.Name.String(), err)
		}
	} else {
		reasons = append(reasons, "Spark "+v+" has no CHANGES clause (4.2 or newer has)")
	}
	if t.Format == Iceberg {
		err := s.probeChangelogView(ctx, t)
		switch {
		case err == nil:
			verdict.Chosen = EngineIcebergChangelogView
			reasons = append(reasons, "Iceberg's changelog view reads "+t.Name.String())
			verdict.Reason = strings.Join(reasons, "; ")
			s.report(t, verdict)
			return verdict, nil
		case isFatal(err):
			return Verdict{}, err
		default:
			refused("Iceberg's changelog view refused "+t.Name.String(), err)
		}
	}
	verdict.FellBack = true
	if t.NativeReadable {
		verdict.Chosen = EngineNative
		reasons = append(reasons, "Sluice reads the table's files itself")
		verdict.Reason = strings.Join(reasons, "; ")
		s.report(t, verdict)
		return verdict, nil
	}
	reasons = append(reasons, "and Sluice cannot read the table's files itself")
	verdict.Reason = strings.Join(reasons, "; ")
	s.report(t, verdict)
	return verdict, fmt.Errorf("%w: %s: %s", ErrNoChangeEngine, t.Name, verdict.Reason)
}

// isFatal reports whether a probe's error is not a refusal of the engine:
// the server is gone, the table unknown, or the context ended.
func isFatal(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrTableNotFound) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrInvalidRequest)
}

// report logs a verdict: info when an engine was chosen as expected, warn
// when it fell back.
func (s *Session) report(t Table, v Verdict) {
	attrs := []any{"table", t.Name.String(), "remote", s.remote.String(), "chosen", string(v.Chosen),
		"server_version", v.ServerVersion, "native_expected", v.NativeExpected, "native_usable", v.NativeUsable,
		"fell_back", v.FellBack, "reason", v.Reason}
	if v.FellBack {
		s.log.Warn("spark: change engine fell back", attrs...)
		return
	}
	s.log.Info("spark: change engine chosen", attrs...)
}

// probeChanges reads one row of CHANGES over w, or over the table's latest commit
// when w is empty.
func (s *Session) probeChanges(ctx context.Context, t Table, w Window) error {
	name, err := t.Name.SQL()
	if err != nil {
		return err
	}
	var clause string
	if fv, ok := w.From.Version(); ok {
		if tv, ok := w.To.Version(); ok && tv > fv {
			clause = fmt.Sprintf("FROM VERSION %d EXCLUSIVE TO VERSION %d", fv, tv)
		}
	}
	if clause == "" {
		hist, err := s.History(ctx, t)
		if err != nil {
			return err
		}
		if len(hist) == 0 {
			return fmt.Errorf("%w: %s has no commits", ErrQuery, t.Name)
		}
		last := hist[len(hist)-1].Version
		clause = fmt.Sprintf("FROM VERSION %d TO VERSION %d", last, last)
	}
	// LIMIT 1, not EXPLAIN: Spark's explain turns a planning error into
	// text, and Delta checks row tracking only when planning.
	return s.collect(ctx, "SELECT * FROM "+name+" CHANGES "+clause+changesOptions(false)+" LIMIT 1",
		func(arrow.RecordBatch) error { return nil })
}

// probeChangelogView reads one row of Iceberg's changelog view of the
// table's whole history: the view's refusals (delete files) come when its
// scan is planned, which plans every snapshot of the window, so the whole
// history is the window that meets every refusal.
func (s *Session) probeChangelogView(ctx context.Context, t Table) error {
	hist, err := s.History(ctx, t)
	if err != nil {
		return err
	}
	if len(hist) == 0 {
		return fmt.Errorf("%w: %s has no snapshots", ErrQuery, t.Name)
	}
	v := changelogWindow{to: hist[len(hist)-1].Version, first: hist[0].Version}
	view, call, err := changelogViewCall(t.Name, v, nil, false)
	if err != nil {
		return err
	}
	if err := s.Exec(ctx, call); err != nil {
		return err
	}
	defer s.dropView(ctx, view)
	return s.collect(ctx, "SELECT * FROM "+view+" LIMIT 1", func(arrow.RecordBatch) error { return nil })
}
