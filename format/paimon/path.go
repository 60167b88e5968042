package paimon

import (
	"fmt"
	"math/big"
	"path"
	"strconv"
	"strings"
	"time"
)

// PartitionValues decodes a partition binary row into its values, one per
// partition column of schema s (see BinaryRow.Value for the Go types).
func PartitionValues(s *Schema, row BinaryRow) ([]any, error) {
	fields := s.PartitionFields()
	if row.Arity() == 0 && len(fields) == 0 {
		return nil, nil
	}
	types := make([]DataType, len(fields))
	for i, f := range fields {
		types[i] = f.Type
	}
	return row.Values(types)
}

// partitionPath is the folder of a partition under the table's root,
// k1=v1/k2=v2 (empty for an unpartitioned table), as Paimon names it: a
// null or empty value is the default partition name, and with
// partition.legacy-name (the default) a DATE is its day number.
func partitionPath(s *Schema, opts Options, row BinaryRow) (string, error) {
	fields := s.PartitionFields()
	if len(fields) == 0 {
		return "", nil
	}
	vals, err := PartitionValues(s, row)
	if err != nil {
		return "", err
	}
	legacy := !strings.EqualFold(s.Options["partition.legacy-name"], "false")
	parts := make([]string, len(fields))
	for i, f := range fields {
		v := partitionString(vals[i], f.Type, legacy)
		if vals[i] == nil || v == "" {
			v = opts.PartitionDefaultName
		}
		parts[i] = escapePathName(f.Name) + "=" + escapePathName(v)
	}
	return strings.Join(parts, "/"), nil
}

// partitionString renders a partition value as Paimon does in paths.
func partitionString(v any, t DataType, legacy bool) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int8, int16, int32, int64:
		return fmt.Sprint(x)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case *big.Rat:
		return x.FloatString(t.Scale)
	case time.Time:
		if t.Root == TypeDate {
			if legacy {
				return strconv.FormatInt(x.Unix()/86400, 10)
			}
			return x.Format("2006-01-02")
		}
		if legacy {
			return localDateTimeString(x)
		}
		return x.Format("2006-01-02 15:04:05.999999999")
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

// localDateTimeString renders t as Java's LocalDateTime.toString does
// (Paimon's legacy partition names): seconds only when not zero, the
// fraction in groups of three digits.
func localDateTimeString(t time.Time) string {
	s := t.Format("2006-01-02T15:04")
	ns := t.Nanosecond()
	if t.Second() == 0 && ns == 0 {
		return s
	}
	s += fmt.Sprintf(":%02d", t.Second())
	switch {
	case ns == 0:
	case ns%1e6 == 0:
		s += fmt.Sprintf(".%03d", ns/1e6)
	case ns%1e3 == 0:
		s += fmt.Sprintf(".%06d", ns/1e3)
	default:
		s += fmt.Sprintf(".%09d", ns)
	}
	return s
}

// escapePathName escapes the characters Paimon (as Hive) escapes in a
// partition folder's name as %XX.
func escapePathName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// bucketPath is the folder of a partition's bucket.
func (t *Table) bucketPath(s *Schema, opts Options, e *ManifestEntry) (string, error) {
	pp, err := partitionPath(s, opts, e.Partition)
	if err != nil {
		return "", fmt.Errorf("table %q: partition of %s: %w", t.name, e.File.FileName, err)
	}
	dir := path.Join(pp, "bucket-"+strconv.Itoa(e.Bucket))
	if pre := strings.Trim(s.Options["data-file.path-directory"], "/"); pre != "" {
		dir = path.Join(pre, dir)
	}
	return dir, nil
}

// FilePath is the path of entry e's data file relative to the table's
// root, with s the table's schema (its partition columns and options).
// A file at an external path fails with ErrUnsupported.
func (t *Table) FilePath(s *Schema, e *ManifestEntry) (string, error) {
	if e.File.ExternalPath != "" {
		return "", fmt.Errorf("%w: table %q: data file %s at external path %s", ErrUnsupported, t.name, e.File.FileName, e.File.ExternalPath)
	}
	opts, err := s.TableOptions()
	if err != nil {
		return "", err
	}
	dir, err := t.bucketPath(s, opts, e)
	if err != nil {
		return "", err
	}
	return path.Join(dir, e.File.FileName), nil
}
