package sluice;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.options.Options;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowKind;

/**
 * Writes the Java-written Paimon fixtures of testdata/paimon: randomized
 * histories (seeded) written by Paimon's Java core, with what Paimon's own
 * reads return at every snapshot (see Expected). Usage: PaimonFixtures OUT_DIR.
 */
public final class PaimonFixtures {
    static final long SEED = 21;
    static final String DB = "java";
    static final String[] NAMES = {"ann", "bo", "cy", "dee", "ed", "fay", "gus", "a longer name than seven"};

    private final Catalog catalog;
    private final Path expected;
    private final Random rng = new Random(SEED);

    PaimonFixtures(Catalog catalog, Path expected) {
        this.catalog = catalog;
        this.expected = expected;
    }

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]).toAbsolutePath();
        Path warehouse = out.resolve("warehouse");
        Files.createDirectories(warehouse);
        Options options = new Options();
        options.set("warehouse", warehouse.toUri().toString());
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options))) {
            catalog.dropDatabase(DB, true, true);
            catalog.createDatabase(DB, false);
            PaimonFixtures f = new PaimonFixtures(catalog, out.resolve("expected").resolve(DB));
            f.primaryKey("pk_compact", Map.of("bucket", "2", "num-sorted-run.compaction-trigger", "3"), true, 10, true);
            f.primaryKey("pk_lookup_changelog", Map.of("bucket", "2", "changelog-producer", "lookup"), false, 8, false);
            f.primaryKey("pk_full_compaction_changelog",
                    Map.of("bucket", "2", "changelog-producer", "full-compaction", "full-compaction.delta-commits", "3"),
                    false, 12, false);
            f.primaryKey("pk_dv", Map.of("bucket", "2", "deletion-vectors.enabled", "true"), false, 8, false);
            f.primaryKey("pk_expire", Map.of("bucket", "1", "snapshot.num-retained.min", "2",
                    "snapshot.num-retained.max", "4", "snapshot.time-retained", "1 ms"), false, 10, false);
            f.primaryKey("pk_partial_update", Map.of("bucket", "1", "merge-engine", "partial-update", "partial-update.remove-record-on-delete", "true"), false, 8, false);
            f.primaryKey("pk_aggregation", Map.of("bucket", "1", "merge-engine", "aggregation",
                    "fields.n.aggregate-function", "sum", "fields.v.aggregate-function", "last_non_null_value", "aggregation.remove-record-on-delete", "true"),
                    false, 8, false);
            f.appendCompact("append_compact", 10);
        }
    }

    Identifier id(String name) {
        return Identifier.create(DB, name);
    }

    FileStoreTable table(String name) throws Exception {
        return (FileStoreTable) catalog.getTable(id(name));
    }

    /** A stream writer with a spill and lookup folder (lookup and deletion vectors need one). */
    StreamTableWrite newWrite(StreamWriteBuilder wb) throws Exception {
        StreamTableWrite w = wb.newWrite();
        w.withIOManager(ioManager());
        return w;
    }

    static IOManager ioManager() throws Exception {
        return IOManager.create(Files.createTempDirectory("paimon-fixtures").toString());
    }

    String name() {
        return NAMES[rng.nextInt(NAMES.length)];
    }

    /**
     * A primary-key table (dt, id) with random upserts and deletes per
     * commit, a column added halfway, a partition overwrite when partitioned,
     * and with wide types (map, decimal, timestamp, bytes) when wide.
     */
    void primaryKey(String name, Map<String, String> opts, boolean partitioned, int steps, boolean wide) throws Exception {
        Schema.Builder b = Schema.newBuilder()
                .column("dt", DataTypes.STRING().notNull())
                .column("id", DataTypes.INT().notNull())
                .column("v", DataTypes.STRING())
                .column("n", DataTypes.BIGINT());
        if (wide) {
            b.column("m", DataTypes.MAP(DataTypes.STRING().notNull(), DataTypes.INT()))
                    .column("d", DataTypes.DECIMAL(20, 4))
                    .column("t", DataTypes.TIMESTAMP(3))
                    .column("bin", DataTypes.BYTES());
        }
        b.primaryKey("dt", "id").options(opts).option("file.format", "parquet");
        if (partitioned) {
            b.partitionKeys("dt");
        }
        catalog.createTable(id(name), b.build(), false);
        Expected exp = new Expected(expected.resolve(name), "paimon-bundle 1.3.0");
        String[] dts = partitioned ? new String[] {"2026-01-01", "2026-01-02", "2026-01-03"} : new String[] {"2026-01-01"};
        TreeSet<String> live = new TreeSet<>();
        boolean added = false;
        boolean reopen = false;
        String user = "fixtures-" + name;
        FileStoreTable table = table(name);
        StreamWriteBuilder wb = table.newStreamWriteBuilder().withCommitUser(user);
        StreamTableWrite write = newWrite(wb);
        StreamTableCommit commit = wb.newCommit();
        for (int step = 0; step < steps; step++) {
            if (step == steps / 2 || reopen) {
                // After a schema change or an overwrite by another writer,
                // a new writer sees the table's files as they are now.
                write.close();
                commit.close();
                if (step == steps / 2 && !added) {
                    catalog.alterTable(id(name), SchemaChange.addColumn("w", DataTypes.DOUBLE()), false);
                    added = true;
                }
                reopen = false;
                table = table(name);
                wb = table.newStreamWriteBuilder().withCommitUser(user);
                write = newWrite(wb);
                commit = wb.newCommit();
            }
            int arity = (wide ? 8 : 4) + (added ? 1 : 0);
            if (partitioned && (step == steps / 3 || step == steps - 3)) {
                String dt = dts[rng.nextInt(dts.length)];
                BatchWriteBuilder bb = table.newBatchWriteBuilder().withOverwrite(Map.of("dt", dt));
                try (BatchTableWrite bw = bb.newWrite(); BatchTableCommit bc = bb.newCommit()) {
                    bw.withIOManager(ioManager());
                    live.removeIf(k -> k.startsWith(dt + "/"));
                    int n = 5 + rng.nextInt(15);
                    for (int i = 0; i < n; i++) {
                        int key = rng.nextInt(200);
                        live.add(dt + "/" + key);
                        bw.write(row(RowKind.INSERT, dt, key, arity, wide));
                    }
                    bc.commit(bw.prepareCommit());
                }
                reopen = true;
            } else {
                int n = 5 + rng.nextInt(20);
                for (int i = 0; i < n; i++) {
                    if (step > 1 && !live.isEmpty() && rng.nextDouble() < 0.25) {
                        String k = pick(live);
                        live.remove(k);
                        String[] p = k.split("/");
                        write.write(row(RowKind.DELETE, p[0], Integer.parseInt(p[1]), arity, wide));
                        continue;
                    }
                    String dt;
                    int key;
                    if (!live.isEmpty() && rng.nextDouble() < 0.5) {
                        String[] p = pick(live).split("/");
                        dt = p[0];
                        key = Integer.parseInt(p[1]);
                    } else {
                        dt = dts[rng.nextInt(dts.length)];
                        key = rng.nextInt(200);
                    }
                    live.add(dt + "/" + key);
                    write.write(row(RowKind.INSERT, dt, key, arity, wide));
                }
                if (step % 5 == 4) {
                    // A full compaction of every bucket written so far.
                    for (BinaryRow part : partitions(table)) {
                        for (int bucket : buckets(table, part)) {
                            write.compact(part, bucket, true);
                        }
                    }
                }
                commit.commit(step, write.prepareCommit(true, step));
            }
            if (step == 3) {
                table.createTag("tag-" + step, table.latestSnapshot().get().id());
            }
            exp.snapshots(table(name));
        }
        write.close();
        commit.close();
        exp.finish(table(name));
    }

    /** An append table with two fixed buckets, compacted by its writer. */
    void appendCompact(String name, int steps) throws Exception {
        Schema schema = Schema.newBuilder()
                .column("id", DataTypes.BIGINT())
                .column("name", DataTypes.STRING())
                .column("tags", DataTypes.ARRAY(DataTypes.STRING()))
                .column("pt", DataTypes.INT())
                .partitionKeys("pt")
                .option("bucket", "2")
                .option("bucket-key", "id")
                .option("compaction.min.file-num", "3")
                .option("file.format", "parquet")
                .build();
        catalog.createTable(id(name), schema, false);
        Expected exp = new Expected(expected.resolve(name), "paimon-bundle 1.3.0");
        FileStoreTable table = table(name);
        StreamWriteBuilder wb = table.newStreamWriteBuilder().withCommitUser("fixtures-" + name);
        StreamTableWrite write = newWrite(wb);
        StreamTableCommit commit = wb.newCommit();
        long next = 0;
        for (int step = 0; step < steps; step++) {
            if (step == steps / 2 + 1) {
                int pt = rng.nextInt(2);
                BatchWriteBuilder bb = table.newBatchWriteBuilder().withOverwrite(Map.of("pt", String.valueOf(pt)));
                try (BatchTableWrite bw = bb.newWrite(); BatchTableCommit bc = bb.newCommit()) {
                    for (int i = 0; i < 10; i++) {
                        bw.write(GenericRow.of(next++, BinaryString.fromString(name()), tags(), pt));
                    }
                    bc.commit(bw.prepareCommit());
                }
                // The stream writer would compact files the overwrite removed.
                write.close();
                commit.close();
                table = table(name);
                wb = table.newStreamWriteBuilder().withCommitUser("fixtures-" + name);
                write = newWrite(wb);
                commit = wb.newCommit();
            } else {
                int n = 3 + rng.nextInt(15);
                for (int i = 0; i < n; i++) {
                    Integer pt = rng.nextDouble() < 0.1 ? null : rng.nextInt(2);
                    write.write(GenericRow.of(next++, rng.nextDouble() < 0.1 ? null : BinaryString.fromString(name()), tags(), pt));
                }
                commit.commit(step, write.prepareCommit(true, step));
            }
            exp.snapshots(table(name));
        }
        write.close();
        commit.close();
        exp.finish(table(name));
    }

    org.apache.paimon.data.GenericArray tags() {
        int n = rng.nextInt(3);
        Object[] a = new Object[n];
        for (int i = 0; i < n; i++) {
            a[i] = BinaryString.fromString(name());
        }
        return new org.apache.paimon.data.GenericArray(a);
    }

    String pick(TreeSet<String> live) {
        int i = rng.nextInt(live.size());
        for (String k : live) {
            if (i-- == 0) {
                return k;
            }
        }
        throw new IllegalStateException();
    }

    GenericRow row(RowKind kind, String dt, int key, int arity, boolean wide) {
        GenericRow r = new GenericRow(kind, arity);
        r.setField(0, BinaryString.fromString(dt));
        r.setField(1, key);
        r.setField(2, rng.nextDouble() < 0.1 ? null : BinaryString.fromString(name()));
        r.setField(3, rng.nextDouble() < 0.1 ? null : (long) rng.nextInt(1000) - 500);
        int i = 4;
        if (wide) {
            Map<Object, Object> m = new HashMap<>();
            for (int j = rng.nextInt(3); j > 0; j--) {
                m.put(BinaryString.fromString(name()), rng.nextDouble() < 0.2 ? null : rng.nextInt(100));
            }
            r.setField(i++, new GenericMap(m));
            r.setField(i++, Decimal.fromBigDecimal(java.math.BigDecimal.valueOf(rng.nextLong() % 100_000_000_000_000L, 4), 20, 4));
            r.setField(i++, Timestamp.fromEpochMillis(1_767_225_600_000L + rng.nextInt(1_000_000_000)));
            byte[] bin = new byte[rng.nextInt(12)];
            rng.nextBytes(bin);
            r.setField(i++, bin);
        }
        if (i < arity) {
            r.setField(i, rng.nextDouble() < 0.3 ? null : (double) rng.nextInt(1000) / 8);
        }
        return r;
    }

    static List<BinaryRow> partitions(FileStoreTable table) {
        List<BinaryRow> out = new ArrayList<>();
        table.newSnapshotReader().partitionEntries().forEach(e -> out.add(e.partition()));
        return out;
    }

    static List<Integer> buckets(FileStoreTable table, BinaryRow part) {
        TreeSet<Integer> out = new TreeSet<>();
        table.newSnapshotReader().withPartitionFilter(List.of(part)).read().dataSplits()
                .forEach(s -> out.add(s.bucket()));
        return new ArrayList<>(out);
    }
}
