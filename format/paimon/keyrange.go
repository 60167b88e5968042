package paimon

import (
	"bytes"
	"cmp"
	"fmt"
	"math/big"
	"time"
)

// keyRange is the [MinKey, MaxKey] of a primary-key table's data file:
// the least and greatest trimmed primary keys it holds, in Paimon's key
// order.
type keyRange struct {
	lo, hi []any
}

// fileKeyRange decodes the key range of data file d, whose keys are of the
// types keys; false when the manifest does not say (an empty key row).
func fileKeyRange(d *DataFile, keys []DataType) (keyRange, bool, error) {
	if d.MinKey.Arity() != len(keys) || d.MaxKey.Arity() != len(keys) || len(keys) == 0 {
		return keyRange{}, false, nil
	}
	lo, err := d.MinKey.Values(keys)
	if err != nil {
		return keyRange{}, false, err
	}
	hi, err := d.MaxKey.Values(keys)
	if err != nil {
		return keyRange{}, false, err
	}
	return keyRange{lo: lo, hi: hi}, true, nil
}

// overlaps reports whether two key ranges share a key.
func (r keyRange) overlaps(o keyRange) (bool, error) {
	c1, err := compareKeys(r.lo, o.hi)
	if err != nil {
		return false, err
	}
	c2, err := compareKeys(o.lo, r.hi)
	if err != nil {
		return false, err
	}
	return c1 <= 0 && c2 <= 0, nil
}

// compareKeys compares two keys field by field as Paimon orders keys:
// numbers by value, strings and binaries by their bytes (unsigned), false
// before true, times by instant.
func compareKeys(a, b []any) (int, error) {
	for i := range a {
		c, err := compareKeyValue(a[i], b[i])
		if err != nil || c != 0 {
			return c, err
		}
	}
	return 0, nil
}

func compareKeyValue(a, b any) (int, error) {
	switch {
	case a == nil && b == nil:
		return 0, nil
	case a == nil:
		return -1, nil
	case b == nil:
		return 1, nil
	}
	switch x := a.(type) {
	case bool:
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0, nil
			case !x:
				return -1, nil
			}
			return 1, nil
		}
	case int8:
		if y, ok := b.(int8); ok {
			return cmp.Compare(x, y), nil
		}
	case int16:
		if y, ok := b.(int16); ok {
			return cmp.Compare(x, y), nil
		}
	case int32:
		if y, ok := b.(int32); ok {
			return cmp.Compare(x, y), nil
		}
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y), nil
		}
	case float32:
		if y, ok := b.(float32); ok {
			return cmp.Compare(x, y), nil
		}
	case float64:
		if y, ok := b.(float64); ok {
			return cmp.Compare(x, y), nil
		}
	case string:
		if y, ok := b.(string); ok {
			return bytes.Compare([]byte(x), []byte(y)), nil
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y), nil
		}
	case *big.Rat:
		if y, ok := b.(*big.Rat); ok {
			return x.Cmp(y), nil
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y), nil
		}
	}
	return 0, fmt.Errorf("%w: keys %T and %T do not compare", ErrUnsupported, a, b)
}
