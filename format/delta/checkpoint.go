package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"strings"
	"time"
)

// checkpointActions are the actions of a checkpoint the replay uses: its
// protocol, metadata and live files. Its remove actions are tombstones for
// VACUUM and do not take part in reading a snapshot, so they are not read.
type checkpointActions struct {
	protocol *Protocol
	metadata *Metadata
	adds     []*Add
	// modTime is the modification time of the checkpoint's (first) file.
	modTime time.Time
}

// readCheckpoint reads checkpoint cp: every part of a multi-part one, and
// the sidecars of a V2 one. With files false it reads only the protocol and
// the metadata (from a V2 checkpoint's manifest, never its sidecars).
func (t *Table) readCheckpoint(ctx context.Context, cp *checkpoint, files bool) (*checkpointActions, error) {
	out := &checkpointActions{}
	var sidecars []*Sidecar
	collect := func(file string) func(a *Action) error {
		return func(a *Action) error {
			if a.Protocol != nil {
				out.protocol = a.Protocol
			}
			if a.MetaData != nil {
				out.metadata = a.MetaData
			}
			if a.CheckpointMetadata != nil && a.CheckpointMetadata.Version != cp.version {
				return fmt.Errorf("%w: table %q, version %d: %s: checkpointMetadata says version %d",
					ErrCorrupt, t.name, cp.version, file, a.CheckpointMetadata.Version)
			}
			if a.Sidecar != nil {
				if cp.kind == checkpointMultiPart {
					return fmt.Errorf("%w: table %q, version %d: %s: a multi-part checkpoint with a sidecar",
						ErrCorrupt, t.name, cp.version, file)
				}
				sidecars = append(sidecars, a.Sidecar)
			}
			if a.Add != nil && files {
				out.adds = append(out.adds, a.Add)
			}
			return nil
		}
	}
	tops := []string{"protocol", "metaData", "checkpointMetadata"}
	if files {
		tops = append(tops, "add", "sidecar")
	}
	for i, file := range cp.files {
		var modTime time.Time
		var err error
		if strings.HasSuffix(file, ".json") {
			modTime, err = t.readJSONCheckpoint(ctx, cp.version, file, collect(file))
		} else {
			modTime, err = t.readParquetActions(ctx, cp.version, file, tops, collect(file))
		}
		if err != nil {
			return nil, err
		}
		if i == 0 {
			out.modTime = modTime
		}
	}
	for _, sc := range sidecars {
		file, err := t.sidecarPath(cp, sc)
		if err != nil {
			return nil, err
		}
		if _, err := t.readParquetActions(ctx, cp.version, file, []string{"add"}, collect(file)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%w: table %q, version %d: checkpoint %s: sidecar %s is missing",
					ErrCorrupt, t.name, cp.version, cp.files[0], file)
			}
			return nil, err
		}
	}
	if out.protocol == nil || out.metadata == nil {
		return nil, fmt.Errorf("%w: table %q, version %d: checkpoint %s has no protocol or no metaData action",
			ErrCorrupt, t.name, cp.version, strings.Join(cp.files, ", "))
	}
	return out, nil
}

// sidecarPath returns the path under the table root of a sidecar of
// checkpoint cp: its path is URL-encoded and relative to _delta_log/_sidecars
// (usually just a file name), or an absolute URI under the table root.
func (t *Table) sidecarPath(cp *checkpoint, sc *Sidecar) (string, error) {
	if schemeRE.MatchString(sc.Path) || strings.HasPrefix(sc.Path, "/") {
		if rel, ok := t.underRoot(sc.Path); ok {
			return rel, nil
		}
		return "", fmt.Errorf("%w: table %q, version %d: checkpoint %s: sidecar %q is outside the table root",
			ErrUnsupported, t.name, cp.version, cp.files[0], sc.Path)
	}
	p, err := url.PathUnescape(sc.Path)
	if err == nil && p != "" && fs.ValidPath(p) {
		return path.Join(sidecarDir, p), nil
	}
	return "", fmt.Errorf("%w: table %q, version %d: checkpoint %s: invalid sidecar path %q",
		ErrCorrupt, t.name, cp.version, cp.files[0], sc.Path)
}

// readJSONCheckpoint reads a JSON V2 checkpoint (a manifest of
// newline-delimited actions) and returns the file's modification time.
func (t *Table) readJSONCheckpoint(ctx context.Context, version int64, file string, fn func(*Action) error) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	f, err := t.fsys.Open(file)
	if err != nil {
		return time.Time{}, fmt.Errorf("table %q, version %d: %w", t.name, version, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return time.Time{}, fmt.Errorf("table %q, version %d: %s: %w", t.name, version, file, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return time.Time{}, fmt.Errorf("table %q, version %d: %s: %w", t.name, version, file, err)
	}
	var fnErr error
	err = parseActions(data, func(_ int, a *Action) error {
		fnErr = fn(a)
		return fnErr
	})
	switch {
	case fnErr != nil:
		return time.Time{}, fnErr
	case err != nil:
		return time.Time{}, fmt.Errorf("%w: table %q, version %d: %s %w", ErrCorrupt, t.name, version, file, err)
	}
	return info.ModTime(), nil
}
