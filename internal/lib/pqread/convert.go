package pqread

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// structConv plans a struct: each target child from the file struct's child
// it matches (by its column spec, or by name), a constant, or nulls.
func (p *projection) structConv(path string, sf *pqarrow.SchemaField, to *arrow.StructType, children []Column) (converter, error) {
	nodes := make([]*node, to.NumFields())
	decoded := false
	for i, f := range to.Fields() {
		c := Column{Name: f.Name}
		if children != nil {
			c = children[i]
		}
		n, err := p.node(sf.Children, f, c, path+"."+f.Name)
		if err != nil {
			return nil, err
		}
		decoded = decoded || n.from == fromFile
		nodes[i] = n
	}
	if !decoded {
		// The struct's own validity comes from its decoded children:
		// decode one even though the target takes none.
		if leaf := firstLeaf(sf); leaf >= 0 {
			p.leaves[leaf] = true
		}
	}
	return func(c *convCtx, a arrow.Array) (arrow.Array, error) {
		st, ok := a.(*array.Struct)
		if !ok {
			return nil, fmt.Errorf("pqread: column %q: decoded %s, want a struct", path, a.DataType())
		}
		stt := st.DataType().(*arrow.StructType)
		kids := make([]arrow.ArrayData, len(nodes))
		defer func() {
			for _, k := range kids {
				if k != nil {
					k.Release()
				}
			}
		}()
		for i, n := range nodes {
			var src arrow.Array
			if n.from == fromFile {
				j, ok := stt.FieldIdx(n.fileName)
				if !ok {
					return nil, fmt.Errorf("pqread: column %q: %q was not decoded", n.path, n.fileName)
				}
				src = st.Field(j)
			}
			out, err := n.build(c, src, st.Len())
			if err != nil {
				return nil, err
			}
			kids[i] = out.Data()
			kids[i].Retain()
			out.Release()
		}
		valid, err := validity(c.mem, st.Data())
		if err != nil {
			return nil, err
		}
		if valid != nil {
			defer valid.Release()
		}
		d := array.NewData(to, st.Len(), []*memory.Buffer{valid}, kids, st.NullN(), 0)
		defer d.Release()
		return array.MakeFromData(d), nil
	}, nil
}

// validity is d's validity bitmap starting at bit 0 (a new reference, nil
// when d has no nulls).
func validity(mem memory.Allocator, d arrow.ArrayData) (*memory.Buffer, error) {
	if d.NullN() == 0 || len(d.Buffers()) == 0 || d.Buffers()[0] == nil {
		return nil, nil
	}
	b := d.Buffers()[0]
	if d.Offset() == 0 {
		b.Retain()
		return b, nil
	}
	out := memory.NewResizableBuffer(mem)
	out.Resize(int(bitutil.BytesForBits(int64(d.Len()))))
	bitutil.CopyBitmap(b.Bytes(), d.Offset(), d.Len(), out.Bytes(), 0)
	return out, nil
}

// listConv plans a list: the element converted (its struct children matched
// by children[0].Children, or by name), the offsets carried over.
func (p *projection) listConv(path string, sf *pqarrow.SchemaField, to arrow.ListLikeType, children []Column) (converter, error) {
	var elemChildren []Column
	if children != nil {
		if err := children[0].validate(path + ".element"); err != nil {
			return nil, err
		}
		elemChildren = children[0].Children
	}
	elem, err := p.convert(path+".element", &sf.Children[0], to.Elem(), elemChildren)
	if err != nil {
		return nil, err
	}
	return func(c *convCtx, a arrow.Array) (arrow.Array, error) {
		l, ok := a.(array.ListLike)
		if !ok {
			return nil, fmt.Errorf("pqread: column %q: decoded %s, want a list", path, a.DataType())
		}
		vals, err := elem(c, l.ListValues())
		if err != nil {
			return nil, err
		}
		defer vals.Release()
		d := l.Data()
		bufs := d.Buffers()[:2]
		_, fromLarge := a.DataType().(*arrow.LargeListType)
		_, toLarge := to.(*arrow.LargeListType)
		if fromLarge != toLarge {
			offs, err := recodeOffsets(c.mem, d, toLarge)
			if err != nil {
				return nil, fmt.Errorf("%w: column %q: %s to %s: %w", ErrCast, path, a.DataType(), to, err)
			}
			defer offs.Release()
			bufs = []*memory.Buffer{bufs[0], offs}
		}
		nd := array.NewData(to, d.Len(), bufs, []arrow.ArrayData{vals.Data()}, d.NullN(), d.Offset())
		defer nd.Release()
		return array.MakeFromData(nd), nil
	}, nil
}

// recodeOffsets rewrites a list's offsets (from its offset on) as 64-bit
// (toLarge) or 32-bit ones.
func recodeOffsets(mem memory.Allocator, d arrow.ArrayData, toLarge bool) (*memory.Buffer, error) {
	n := d.Len() + 1
	out := memory.NewResizableBuffer(mem)
	if toLarge {
		src := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset() : d.Offset()+n]
		out.Resize(arrow.Int64Traits.BytesRequired(n))
		dst := arrow.Int64Traits.CastFromBytes(out.Bytes())
		for i, v := range src {
			dst[i] = int64(v)
		}
		return out, nil
	}
	src := arrow.Int64Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset() : d.Offset()+n]
	if src[n-1] > int64(^uint32(0)>>1) {
		out.Release()
		return nil, fmt.Errorf("offsets overflow 32 bits")
	}
	out.Resize(arrow.Int32Traits.BytesRequired(n))
	dst := arrow.Int32Traits.CastFromBytes(out.Bytes())
	for i, v := range src {
		dst[i] = int32(v)
	}
	return out, nil
}

// mapConv plans a map: keys and values converted (a struct value's
// children matched by children[1].Children, or by name), the offsets carried
// over.
func (p *projection) mapConv(path string, sf *pqarrow.SchemaField, to *arrow.MapType, children []Column) (converter, error) {
	var keyChildren, valChildren []Column
	if children != nil {
		if err := children[0].validate(path + ".key"); err != nil {
			return nil, err
		}
		if err := children[1].validate(path + ".value"); err != nil {
			return nil, err
		}
		keyChildren, valChildren = children[0].Children, children[1].Children
	}
	// A map is decoded whole, whatever the leaves asked for.
	p.addLeaves(sf)
	kv := &sf.Children[0]
	key, err := p.convert(path+".key", &kv.Children[0], to.KeyType(), keyChildren)
	if err != nil {
		return nil, err
	}
	val, err := p.convert(path+".value", &kv.Children[1], to.ItemType(), valChildren)
	if err != nil {
		return nil, err
	}
	return func(c *convCtx, a arrow.Array) (arrow.Array, error) {
		m, ok := a.(*array.Map)
		if !ok {
			return nil, fmt.Errorf("pqread: column %q: decoded %s, want a map", path, a.DataType())
		}
		d := m.Data()
		entries := array.NewStructData(d.Children()[0])
		defer entries.Release()
		k, err := key(c, entries.Field(0))
		if err != nil {
			return nil, err
		}
		defer k.Release()
		v, err := val(c, entries.Field(1))
		if err != nil {
			return nil, err
		}
		defer v.Release()
		valid, err := validity(c.mem, entries.Data())
		if err != nil {
			return nil, err
		}
		if valid != nil {
			defer valid.Release()
		}
		ed := array.NewData(to.Elem(), entries.Len(), []*memory.Buffer{valid},
			[]arrow.ArrayData{k.Data(), v.Data()}, entries.NullN(), 0)
		defer ed.Release()
		nd := array.NewData(to, d.Len(), d.Buffers()[:2], []arrow.ArrayData{ed}, d.NullN(), d.Offset())
		defer nd.Release()
		return array.MakeFromData(nd), nil
	}, nil
}

// retain is the converter of a column the file holds in the target type.
func retain(_ *convCtx, a arrow.Array) (arrow.Array, error) {
	a.Retain()
	return a, nil
}

// relabeler is the converter of a column whose layout is the target's but
// whose type differs in names, metadata or time zone: the same buffers
// under the target type.
func relabeler(to arrow.DataType) converter {
	return func(_ *convCtx, a arrow.Array) (arrow.Array, error) {
		d := relabel(a.Data(), to)
		defer d.Release()
		return array.MakeFromData(d), nil
	}
}

// relabel is d under the type to, which has d's layout.
func relabel(d arrow.ArrayData, to arrow.DataType) arrow.ArrayData {
	var kids []arrow.ArrayData
	if len(d.Children()) > 0 {
		var types []arrow.DataType
		switch t := to.(type) {
		case *arrow.StructType:
			for _, f := range t.Fields() {
				types = append(types, f.Type)
			}
		case *arrow.MapType:
			types = []arrow.DataType{t.Elem()}
		case arrow.ListLikeType:
			types = []arrow.DataType{t.Elem()}
		}
		if len(types) == len(d.Children()) {
			kids = make([]arrow.ArrayData, len(types))
			for i, c := range d.Children() {
				kids[i] = relabel(c, types[i])
				defer kids[i].Release()
			}
		} else {
			kids = d.Children()
		}
	}
	nd := array.NewData(to, d.Len(), d.Buffers(), kids, d.NullN(), d.Offset())
	if dict := d.Dictionary(); dict != nil {
		nd.SetDictionary(dict)
	}
	return nd
}

// castError is the error for a column whose file type has no conversion to
// its target type.
func castError(path string, from, to arrow.DataType) error {
	return fmt.Errorf("%w: column %q: %s to %s", ErrCast, path, from, to)
}

// primitive plans the conversion of a primitive file type to a target
// type: none, a relabeling, or a cast by one of the widening rules (see
// widens). The cast itself checks each value (a timestamp with a
// sub-microsecond part, a string that is not UTF-8) and fails rather than
// lose it.
func (p *projection) primitive(path string, from, to arrow.DataType) (converter, error) {
	switch {
	case arrow.TypeEqual(from, to):
		return retain, nil
	case from.ID() == arrow.NULL:
		return func(c *convCtx, a arrow.Array) (arrow.Array, error) {
			return array.MakeArrayOfNull(c.mem, to, a.Len()), nil
		}, nil
	}
	if fd, ok := from.(*arrow.DictionaryType); ok {
		inner, err := p.primitive(path, fd.ValueType, to)
		if err != nil {
			return nil, castError(path, from, to)
		}
		unpack := caster(path, fd.ValueType)
		return func(c *convCtx, a arrow.Array) (arrow.Array, error) {
			plain, err := unpack(c, a)
			if err != nil {
				return nil, err
			}
			defer plain.Release()
			return inner(c, plain)
		}, nil
	}
	if fe, ok := from.(arrow.ExtensionType); ok {
		if te, ok := to.(arrow.ExtensionType); ok && te.ExtensionName() == fe.ExtensionName() {
			return p.wrap(path, fe.StorageType(), te)
		}
		inner, err := p.primitive(path, fe.StorageType(), to)
		if err != nil {
			return nil, castError(path, from, to)
		}
		return func(c *convCtx, a arrow.Array) (arrow.Array, error) {
			return inner(c, a.(array.ExtensionArray).Storage())
		}, nil
	}
	if te, ok := to.(arrow.ExtensionType); ok {
		return p.wrap(path, from, te)
	}
	if ft, ok := from.(*arrow.TimestampType); ok {
		if tt, ok := to.(*arrow.TimestampType); ok && ft.Unit == tt.Unit {
			return relabeler(to), nil // the zone as the target says
		}
	}
	if !widens(from, to) {
		return nil, castError(path, from, to)
	}
	return caster(path, to), nil
}

// wrap plans the conversion to an extension type: to its storage type,
// then wrapped. (An extension array's storage is read as the storage type.)
func (p *projection) wrap(path string, from arrow.DataType, to arrow.ExtensionType) (converter, error) {
	inner, err := p.primitive(path, from, to.StorageType())
	if err != nil {
		return nil, castError(path, from, to)
	}
	return func(c *convCtx, a arrow.Array) (arrow.Array, error) {
		if ea, ok := a.(array.ExtensionArray); ok {
			a = ea.Storage()
		}
		s, err := inner(c, a)
		if err != nil {
			return nil, err
		}
		defer s.Release()
		return array.NewExtensionArrayWithStorage(to, s), nil
	}, nil
}

// caster casts with arrow's compute cast, failing on any value it would
// change.
func caster(path string, to arrow.DataType) converter {
	opts := compute.SafeCastOptions(to)
	return func(c *convCtx, a arrow.Array) (arrow.Array, error) {
		out, err := compute.CastArray(c.ctx, a, opts)
		if err != nil {
			return nil, fmt.Errorf("%w: column %q: %s to %s: %w", ErrCast, path, a.DataType(), to, err)
		}
		return out, nil
	}
}

// widens reports whether every value of the primitive type from has a
// value of type to, so that a cast loses nothing (a timestamp's unit and a
// time's unit are checked value by value instead).
func widens(from, to arrow.DataType) bool {
	f, t := from.ID(), to.ID()
	switch {
	case arrow.IsInteger(f) && arrow.IsInteger(t):
		fb, tb := bitWidth(from), bitWidth(to)
		fs, ts := arrow.IsSignedInteger(f), arrow.IsSignedInteger(t)
		return (fs == ts && tb >= fb) || (!fs && ts && tb > fb)
	case arrow.IsInteger(f) && arrow.IsFloating(t):
		// Exact while the integer fits the mantissa.
		switch t {
		case arrow.FLOAT32:
			return bitWidth(from) <= 16
		case arrow.FLOAT64:
			return bitWidth(from) <= 32
		}
		return false
	case arrow.IsFloating(f) && arrow.IsFloating(t):
		return bitWidth(to) >= bitWidth(from)
	case arrow.IsInteger(f) && arrow.IsDecimal(t):
		dt := to.(arrow.DecimalType)
		return intDigits(from) <= dt.GetPrecision()-dt.GetScale()
	case arrow.IsDecimal(f) && arrow.IsDecimal(t):
		fd, td := from.(arrow.DecimalType), to.(arrow.DecimalType)
		return td.GetScale() >= fd.GetScale() &&
			td.GetPrecision()-td.GetScale() >= fd.GetPrecision()-fd.GetScale()
	case f == arrow.DATE32 || f == arrow.DATE64:
		return t == arrow.DATE64 || t == arrow.TIMESTAMP || (f == arrow.DATE32 && t == arrow.DATE32)
	case f == arrow.TIMESTAMP:
		return t == arrow.TIMESTAMP
	case f == arrow.TIME32 || f == arrow.TIME64:
		return t == arrow.TIME32 || t == arrow.TIME64
	case slices.Contains(stringTypes, f):
		return slices.Contains(stringTypes, t) || slices.Contains(binaryTypes, t)
	case slices.Contains(binaryTypes, f):
		// To a string type the cast checks that the bytes are UTF-8.
		return slices.Contains(stringTypes, t) || slices.Contains(binaryTypes, t)
	}
	return false
}

var (
	stringTypes = []arrow.Type{arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW}
	binaryTypes = []arrow.Type{arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW}
)

func bitWidth(dt arrow.DataType) int {
	if fw, ok := dt.(arrow.FixedWidthDataType); ok {
		return fw.BitWidth()
	}
	return 0
}

// intDigits is how many decimal digits an integer type's values can have.
func intDigits(dt arrow.DataType) int32 {
	switch dt.ID() {
	case arrow.INT8, arrow.UINT8:
		return 3
	case arrow.INT16, arrow.UINT16:
		return 5
	case arrow.INT32, arrow.UINT32:
		return 10
	case arrow.INT64:
		return 19
	default:
		return 20
	}
}

// build makes n's array for a parent of length rows: from src (the file's
// decoded values, for fromFile), the constant, or nulls. The caller
// releases it.
func (n *node) build(c *convCtx, src arrow.Array, rows int) (arrow.Array, error) {
	switch n.from {
	case fromFile:
		return n.conv(c, src)
	case fromConst:
		a, err := scalar.MakeArrayFromScalar(n.value, rows, c.mem)
		if err != nil {
			return nil, fmt.Errorf("%w: column %q: constant %s: %w", ErrInvalid, n.path, n.value, err)
		}
		if n.valueConv == nil {
			return a, nil
		}
		defer a.Release()
		return n.valueConv(c, a)
	default:
		return array.MakeArrayOfNull(c.mem, n.typ, rows), nil
	}
}
