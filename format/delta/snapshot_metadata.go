package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// Metadata returns the protocol and the metadata of the table at version,
// without replaying its files: it searches the commits backwards from
// version for the latest protocol and metaData actions, down to a cached
// version or the newest checkpoint, whose protocol and metadata it reads
// then. Errors are those of Snapshot, without ErrUnsupportedFeature.
func (t *Table) Metadata(ctx context.Context, version int64) (Protocol, Metadata, error) {
	if version < 0 {
		return Protocol{}, Metadata{}, fmt.Errorf("%w: table %q, version %d", ErrVersionNotFound, t.name, version)
	}
	if pm, ok := t.metadata.Get(version); ok {
		return pm.protocol, pm.metadata, nil
	}
	if s, ok := t.snapshots.Peek(version); ok {
		return s.Protocol, s.Metadata, nil
	}
	var p *Protocol
	var m *Metadata
	if u, pm, ok := t.cachedMetadataBefore(version, incrementalLimit); ok {
		err := t.searchBack(ctx, version, u, &p, &m)
		if err == nil {
			return t.keepMetadata(version, p, m, &pm.protocol, &pm.metadata)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return Protocol{}, Metadata{}, err
		}
		p, m = nil, nil
	}
	var pr Protocol
	var md Metadata
	err := t.withListing(ctx, func(l *listing) error {
		cp, err := t.base(l, version)
		if err != nil {
			return err
		}
		pr, md, err = t.metadataFrom(ctx, version, cp)
		return err
	})
	return pr, md, err
}

// metadataFrom returns the protocol and metadata at version, whose state
// is rebuilt from checkpoint cp (nil: from the first commit): the latest
// ones in the commits after cp, else cp's.
func (t *Table) metadataFrom(ctx context.Context, version int64, cp *checkpoint) (Protocol, Metadata, error) {
	if pm, ok := t.metadata.Get(version); ok {
		return pm.protocol, pm.metadata, nil
	}
	var p *Protocol
	var m *Metadata
	stop := int64(-1)
	if cp != nil {
		stop = cp.version
	}
	if err := t.searchBack(ctx, version, stop, &p, &m); err != nil {
		return Protocol{}, Metadata{}, err
	}
	if (p == nil || m == nil) && cp != nil {
		cpa, err := t.readCheckpoint(ctx, cp, false)
		if err != nil {
			return Protocol{}, Metadata{}, err
		}
		return t.keepMetadata(version, p, m, cpa.protocol, cpa.metadata)
	}
	return t.keepMetadata(version, p, m, nil, nil)
}

// searchBack reads the commits from version down to stop (excluded) until
// it has found a protocol and a metaData action. An error wrapping
// fs.ErrNotExist means a commit file is missing.
func (t *Table) searchBack(ctx context.Context, version, stop int64, p **Protocol, m **Metadata) error {
	for v := version; v > stop && (*p == nil || *m == nil); v-- {
		c, err := t.commit(ctx, v)
		if err != nil {
			return err
		}
		if *p == nil {
			*p = c.Protocol
		}
		if *m == nil {
			*m = c.Metadata
		}
	}
	return nil
}

// keepMetadata completes the protocol and metadata found in the commits
// with those of an older state (nil: none), caches them and returns them.
func (t *Table) keepMetadata(version int64, p *Protocol, m *Metadata, olderP *Protocol, olderM *Metadata) (Protocol, Metadata, error) {
	if p == nil {
		p = olderP
	}
	if m == nil {
		m = olderM
	}
	if p == nil || m == nil {
		return Protocol{}, Metadata{}, fmt.Errorf("%w: table %q, version %d: no protocol or no metaData action at or before it",
			ErrCorrupt, t.name, version)
	}
	t.metadata.Add(version, protocolMetadata{protocol: *p, metadata: *m})
	return *p, *m, nil
}

// cachedMetadataBefore returns the newest version older than version, at
// most limit older, whose protocol and metadata are cached (alone or with
// its snapshot).
func (t *Table) cachedMetadataBefore(version, limit int64) (int64, protocolMetadata, bool) {
	best, found := int64(-1), false
	var pm protocolMetadata
	consider := func(v int64, get func() (protocolMetadata, bool)) {
		if v >= version || version-v > limit || (found && v <= best) {
			return
		}
		if got, ok := get(); ok {
			best, pm, found = v, got, true
		}
	}
	for _, v := range t.metadata.Keys() {
		consider(v, func() (protocolMetadata, bool) { return t.metadata.Peek(v) })
	}
	for _, v := range t.snapshots.Keys() {
		consider(v, func() (protocolMetadata, bool) {
			s, ok := t.snapshots.Peek(v)
			if !ok {
				return protocolMetadata{}, false
			}
			return protocolMetadata{protocol: s.Protocol, metadata: s.Metadata}, true
		})
	}
	return best, pm, found
}
