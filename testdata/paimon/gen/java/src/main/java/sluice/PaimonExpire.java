package sluice;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.consumer.ConsumerManager;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.table.FileStoreTable;

/**
 * Expires a Paimon table's snapshots with Paimon's own Java expiry, as a
 * maintenance job would: retain at most one snapshot, older than a
 * millisecond, so that everything but the latest goes unless a consumer
 * holds it. The e2e test of consumer protection (e2e/protect_paimon_test.go)
 * runs it against a table on which Sluice wrote a consumer file.
 *
 * <p>Usage: PaimonExpire WAREHOUSE DB TABLE [BRANCH]. With BRANCH it expires
 * the branch's snapshots, as Paimon's expiry on the table's branch does,
 * with the branch's own consumers. Prints JSON: the consumers as Paimon's
 * ConsumerManager reads them (id to nextSnapshot), the snapshots before and
 * after the expiry, and how many it expired.
 */
public final class PaimonExpire {
    private PaimonExpire() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 3 && args.length != 4) {
            throw new IllegalArgumentException("usage: PaimonExpire WAREHOUSE DB TABLE [BRANCH]");
        }
        Options options = new Options();
        options.set("warehouse", args[0]);
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options))) {
            FileStoreTable t = (FileStoreTable) catalog.getTable(Identifier.create(args[1], args[2]));
            ConsumerManager consumers = new ConsumerManager(t.fileIO(), t.location());
            if (args.length == 4) {
                t = t.switchToBranch(args[3]);
                consumers = new ConsumerManager(t.fileIO(), t.location(), args[3]);
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("consumers", consumers.consumers());
            out.put("before", snapshots(t));
            int expired = t.newExpireSnapshots().config(ExpireConfig.builder().snapshotRetainMax(1)
                    .snapshotRetainMin(1).snapshotTimeRetain(Duration.ofMillis(1)).build()).expire();
            out.put("expired", expired);
            out.put("after", snapshots(t));
            System.out.println(new ObjectMapper().writeValueAsString(out));
        }
    }

    /** The ids of the table's snapshots, oldest first. */
    static List<Long> snapshots(FileStoreTable t) throws Exception {
        List<Long> ids = new ArrayList<>();
        for (var it = t.snapshotManager().snapshots(); it.hasNext(); ) {
            Snapshot s = it.next();
            ids.add(s.id());
        }
        ids.sort(Long::compare);
        return ids;
    }
}
