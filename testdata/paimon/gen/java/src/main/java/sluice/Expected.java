package sluice;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import org.apache.paimon.Snapshot;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.LocalZonedTimestampType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowType;
import org.apache.paimon.types.TimestampType;

/**
 * Records what Paimon's own Java reads return for each snapshot of a table:
 * state/ID.jsonl (the batch read at scan.snapshot-id) and, from the second
 * snapshot on, changes/ID.jsonl (the incremental read between the snapshot's
 * parent and it, incremental-between-scan-mode auto: the changelog files
 * with a changelog producer, the delta files without), each row with its
 * _row_kind. Rows are canonical JSON (testdata/paimon/README.md), sorted.
 */
final class Expected {
    static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS");
    static final ObjectMapper JSON = new ObjectMapper().configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);

    private final Path dir;
    private final String writer;
    private final List<Map<String, Object>> snapshots = new ArrayList<>();
    private long done;

    Expected(Path dir, String writer) throws Exception {
        this.dir = dir;
        this.writer = writer;
        if (Files.exists(dir)) {
            try (var walk = Files.walk(dir)) {
                walk.sorted(Collections.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        Files.createDirectories(dir);
    }

    /** Records every snapshot committed since the last call. */
    void snapshots(FileStoreTable table) throws Exception {
        long latest = table.latestSnapshot().get().id();
        for (long id = done + 1; id <= latest; id++) {
            record(table, id);
        }
        done = latest;
    }

    private void record(FileStoreTable table, long id) throws Exception {
        Snapshot snap = table.snapshotManager().snapshot(id);
        FileStoreTable at = table.copy(Map.of("scan.snapshot-id", String.valueOf(id)));
        List<String> state = read(at.newReadBuilder(), at.rowType(), false);
        write(dir.resolve("state").resolve(id + ".jsonl"), state);
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("id", id);
        e.put("commitKind", snap.commitKind().name());
        e.put("schemaId", snap.schemaId());
        e.put("rows", state.size());
        e.put("changes", id > 1);
        if (id > 1) {
            FileStoreTable inc = table.copy(Map.of("incremental-between", (id - 1) + "," + id));
            write(dir.resolve("changes").resolve(id + ".jsonl"), read(inc.newReadBuilder(), inc.rowType(), true));
        }
        snapshots.add(e);
    }

    /** Writes table.json, noting the snapshots expired since they were recorded. */
    void finish(FileStoreTable table) throws Exception {
        long earliest = table.snapshotManager().earliestSnapshotId();
        for (Map<String, Object> e : snapshots) {
            e.put("expired", (long) e.get("id") < earliest);
        }
        Map<String, Object> meta = new TreeMap<>();
        meta.put("table", dir.getFileName().toString());
        meta.put("writer", writer);
        meta.put("snapshots", snapshots);
        meta.put("tags", table.tagManager().allTagNames());
        Files.writeString(dir.resolve("table.json"),
                JSON.writerWithDefaultPrettyPrinter().writeValueAsString(meta) + "\n");
    }

    private static List<String> read(ReadBuilder rb, RowType type, boolean kinds) throws Exception {
        List<String> out = new ArrayList<>();
        try (RecordReader<InternalRow> r = rb.newRead().createReader(rb.newScan().plan())) {
            r.forEachRemaining(row -> {
                Map<String, Object> m = new TreeMap<>();
                List<DataField> fields = type.getFields();
                for (int i = 0; i < fields.size(); i++) {
                    m.put(fields.get(i).name(), value(row, i, fields.get(i).type()));
                }
                if (kinds) {
                    m.put("_row_kind", row.getRowKind().shortString());
                }
                try {
                    out.add(JSON.writeValueAsString(m));
                } catch (Exception ex) {
                    throw new RuntimeException(ex);
                }
            });
        }
        Collections.sort(out);
        return out;
    }

    private static void write(Path p, List<String> lines) throws Exception {
        Files.createDirectories(p.getParent());
        StringBuilder sb = new StringBuilder();
        for (String l : lines) {
            sb.append(l).append('\n');
        }
        Files.writeString(p, sb.toString(), StandardCharsets.UTF_8);
    }

    /** The canonical JSON value of field i of row (README: the row encoding). */
    static Object value(InternalRow row, int i, DataType t) {
        if (row.isNullAt(i)) {
            return null;
        }
        switch (t.getTypeRoot()) {
            case CHAR:
            case VARCHAR:
                return row.getString(i).toString();
            case BOOLEAN:
                return row.getBoolean(i);
            case BINARY:
            case VARBINARY:
                return Base64.getEncoder().encodeToString(row.getBinary(i));
            case DECIMAL:
                DecimalType dt = (DecimalType) t;
                return row.getDecimal(i, dt.getPrecision(), dt.getScale()).toBigDecimal().toPlainString();
            case TINYINT:
                return row.getByte(i);
            case SMALLINT:
                return row.getShort(i);
            case INTEGER:
                return row.getInt(i);
            case DATE:
                return java.time.LocalDate.ofEpochDay(row.getInt(i)).toString();
            case BIGINT:
                return row.getLong(i);
            case FLOAT:
                return row.getFloat(i);
            case DOUBLE:
                return row.getDouble(i);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return row.getTimestamp(i, ((TimestampType) t).getPrecision()).toLocalDateTime().format(TS);
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return row.getTimestamp(i, ((LocalZonedTimestampType) t).getPrecision()).toLocalDateTime().format(TS);
            case ARRAY:
                return array(row.getArray(i), ((ArrayType) t).getElementType());
            case MAP:
                MapType mt = (MapType) t;
                return map(row.getMap(i), mt.getKeyType(), mt.getValueType());
            case ROW:
                RowType rt = (RowType) t;
                InternalRow nested = row.getRow(i, rt.getFieldCount());
                Map<String, Object> m = new TreeMap<>();
                for (int j = 0; j < rt.getFieldCount(); j++) {
                    m.put(rt.getFields().get(j).name(), value(nested, j, rt.getTypeAt(j)));
                }
                return m;
            default:
                throw new IllegalArgumentException("no canonical form for " + t);
        }
    }

    static List<Object> array(InternalArray a, DataType elem) {
        InternalArray.ElementGetter get = InternalArray.createElementGetter(elem);
        List<Object> out = new ArrayList<>();
        for (int j = 0; j < a.size(); j++) {
            out.add(value(GenericRow.of(get.getElementOrNull(a, j)), 0, elem));
        }
        return out;
    }

    /** A map as [key, value] pairs sorted by their JSON. */
    static List<Object> map(InternalMap m, DataType kt, DataType vt) {
        List<Object> keys = array(m.keyArray(), kt);
        List<Object> vals = array(m.valueArray(), vt);
        Map<String, Object> byJSON = new TreeMap<>();
        for (int j = 0; j < keys.size(); j++) {
            List<Object> pair = new ArrayList<>();
            pair.add(keys.get(j));
            pair.add(vals.get(j));
            try {
                byJSON.put(JSON.writeValueAsString(pair), pair);
            } catch (Exception ex) {
                throw new RuntimeException(ex);
            }
        }
        return new ArrayList<>(byJSON.values());
    }
}
