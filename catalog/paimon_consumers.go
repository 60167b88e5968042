package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/sluicefeed/sluice/internal/lib/storage"
)

// PaimonConsumerPrefix starts the Paimon consumer id of each Sluice
// consumer: the consumer c of a table has the file
// consumer/consumer-sluice-<c> in the table's folder (see PaimonConsumerID).
const PaimonConsumerPrefix = "sluice-"

// paimonConsumer is the JSON of a Paimon consumer file, which Paimon's
// snapshot expiry honours: it keeps every snapshot from nextSnapshot on.
type paimonConsumer struct {
	NextSnapshot int64 `json:"nextSnapshot"`
}

// PaimonConsumerID is the Paimon consumer id of a Sluice consumer:
// PaimonConsumerPrefix and the id, with every byte but letters, digits and
// ". _ -" written as %XX (a file name cannot hold "/").
func PaimonConsumerID(consumer string) string {
	var b strings.Builder
	b.WriteString(PaimonConsumerPrefix)
	for i := 0; i < len(consumer); i++ {
		c := consumer[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// paimonConsumerFile is the path of a consumer's file in its table's
// folder: the main branch's consumer folder, or the branch's
// (branch/branch-<name>/consumer, where Paimon's expiry of that branch
// reads it).
func paimonConsumerFile(branch, consumer string) (string, error) {
	file := path.Join("consumer", "consumer-"+PaimonConsumerID(consumer))
	if branch == "" {
		return file, nil
	}
	if strings.ContainsAny(branch, `/\`) || branch == "." || branch == ".." {
		return "", fmt.Errorf("%w: Paimon branch %q: a branch's folder name holds no / or \\", ErrInvalidConfig, branch)
	}
	return path.Join("branch", "branch-"+branch, file), nil
}

// paimonWriter is storage a consumer file can be written to.
type paimonWriter interface {
	WriteFile(name string, data []byte) error
	Remove(name string) error
}

// tableWriter returns the writable folder of the table name.
func (p *PaimonTables) tableWriter(name string) (paimonWriter, string, error) {
	dir, ok := paimonFolder(name)
	if !ok || !p.Has(name) {
		return nil, "", fmt.Errorf("%w: %s", ErrTableNotFound, name)
	}
	switch {
	case p.rootErr != nil:
		return nil, "", fmt.Errorf("%w: --paimon-warehouse %v", ErrInvalidConfig, p.rootErr)
	case p.root != nil:
		return p.root, dir, nil
	case p.local != nil:
		return p.local, dir, nil
	}
	return nil, "", fmt.Errorf("%w: no Paimon warehouse", ErrTableNotFound)
}

// SetConsumer writes the Paimon consumer file of a Sluice consumer of the
// table name's branch ("": the main branch), {"nextSnapshot": next}:
// Paimon's expiry of the branch then keeps snapshot next and every later
// one. It replaces the consumer's previous file.
func (p *PaimonTables) SetConsumer(_ context.Context, name, branch, consumer string, next int64) error {
	w, dir, err := p.tableWriter(name)
	if err != nil {
		return err
	}
	file, err := paimonConsumerFile(branch, consumer)
	if err != nil {
		return err
	}
	data, err := json.Marshal(paimonConsumer{NextSnapshot: next})
	if err != nil {
		return err
	}
	if err := w.WriteFile(path.Join(dir, file), data); err != nil {
		return writeError(name, "write the consumer file of "+consumer, err)
	}
	return nil
}

// DropConsumer removes the Paimon consumer file of a Sluice consumer of
// the table name's branch ("": the main branch); none is no error.
func (p *PaimonTables) DropConsumer(_ context.Context, name, branch, consumer string) error {
	w, dir, err := p.tableWriter(name)
	if err != nil {
		return err
	}
	file, err := paimonConsumerFile(branch, consumer)
	if err != nil {
		return err
	}
	if err := w.Remove(path.Join(dir, file)); err != nil {
		return writeError(name, "remove the consumer file of "+consumer, err)
	}
	return nil
}

// CheckWritable reports whether consumer files can be written to the
// warehouse: a local one must be writable (an error wrapping ErrReadOnly
// otherwise); object storage is asked at the first write.
func (p *PaimonTables) CheckWritable() error {
	if p.local == nil {
		return nil
	}
	if err := p.local.CheckWritable(); err != nil {
		return fmt.Errorf("%w: --paimon-warehouse: %v", ErrReadOnly, err)
	}
	return nil
}

// writeError classifies the error of a write to a table's storage: a
// storage that refuses it is ErrReadOnly, else ErrUnavailable.
func writeError(name, what string, err error) error {
	if errors.Is(err, storage.ErrReadOnly) || errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w: %s: %s: %v", ErrReadOnly, name, what, err)
	}
	return fmt.Errorf("%w: %s: %s: %v", ErrUnavailable, name, what, err)
}
