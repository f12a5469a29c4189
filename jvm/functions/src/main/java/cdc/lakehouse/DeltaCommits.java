package cdc.lakehouse;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.delta.DeltaConfigs;
import org.apache.spark.sql.delta.DeltaHistory;
import org.apache.spark.sql.delta.DeltaHistoryManager;
import org.apache.spark.sql.delta.DeltaLog;
import org.apache.spark.sql.delta.DeltaTableUtils;
import org.apache.spark.sql.delta.InCommitTimestampUtils;
import org.apache.spark.sql.delta.Snapshot;
import org.apache.spark.sql.delta.actions.CommitInfo;
import org.apache.spark.sql.delta.storage.LogStore;
import org.apache.spark.sql.delta.util.DeltaCommitFileProvider;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import scala.Option;

/**
 * {@code call cdc_lakehouse.delta.commits('<database>.<table>', <n>)}: the rows of
 * {@code describe history <table> limit <n>}, read on the driver. The models read the newest
 * commits of the tables they depend on at compile time to know what is new (macro
 * {@code cdc_newest_commits}, macros/cdc_watermark.sql), several times per build.
 *
 * <p>Why: Delta's statement reads the commit files in a Spark job ({@code
 * spark.range(...).mapPartitions}, then a local relation of the rows), and the job costs far
 * more than reading the few small files. A procedure (Spark's public catalog API, like the
 * functions of {@link JsonFunctions}) runs on the driver and its rows come back without a job.
 * This reads the files as that job's tasks do, with Delta's own classes: the commit info of each
 * version, its time the file's modification time (made to increase with the version) or, for
 * versions written with in-commit timestamps, the commit's own; newest first. Each row is
 * Delta's {@code DeltaHistory} as the statement's encoder writes it, so the columns are the
 * statement's.
 */
final class DeltaCommits implements UnboundProcedure, BoundProcedure {
  private static final ProcedureParameter[] PARAMETERS = {
    ProcedureParameter.in("table", DataTypes.StringType).build(),
    ProcedureParameter.in("limit", DataTypes.IntegerType).build(),
  };

  @Override
  public String name() {
    return "commits";
  }

  @Override
  public String description() {
    return "commits(table string, limit int): the rows of `describe history <table> limit <limit>`, read on the driver";
  }

  @Override
  public BoundProcedure bind(StructType inputType) {
    StructField[] fields = inputType.fields();
    if (fields.length != 2 || !fields[0].dataType().equals(DataTypes.StringType)
        || !fields[1].dataType().equals(DataTypes.IntegerType)) {
      throw new UnsupportedOperationException(
          "cdc_lakehouse.delta.commits takes (table string, limit int), got " + inputType.simpleString());
    }
    return this;
  }

  @Override
  public ProcedureParameter[] parameters() {
    return PARAMETERS.clone();
  }

  @Override
  public boolean isDeterministic() {
    return false;
  }

  @Override
  public Iterator<Scan> call(InternalRow input) {
    if (input.isNullAt(0) || input.isNullAt(1)) {
      throw new IllegalArgumentException("cdc_lakehouse.delta.commits needs a table and a limit, got a null");
    }
    String table = input.getUTF8String(0).toString();
    int limit = input.getInt(1);
    InternalRow[] rows;
    try {
      rows = newest(SparkSession.active(), table, limit);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      // a name that does not parse, a table or database not found (Spark's checked analysis errors)
      throw new IllegalArgumentException("cannot read the commits of " + table + ": " + e.getMessage(), e);
    }
    return Collections.<Scan>singletonList(new Rows(rows)).iterator();
  }

  /** The rows, read already: Spark takes them from the driver as they are. */
  private static final class Rows implements LocalScan {
    private final InternalRow[] rows;

    Rows(InternalRow[] rows) {
      this.rows = rows;
    }

    @Override
    public InternalRow[] rows() {
      return rows.clone();
    }

    @Override
    public StructType readSchema() {
      return encoder().schema();
    }

    @Override
    public String description() {
      return "the newest commits of a Delta table";
    }
  }

  /** The newest {@code limit} commits of the Delta table named {@code table}, newest first. */
  static InternalRow[] newest(SparkSession spark, String table, int limit) throws Exception {
    if (limit < 1) {
      throw new IllegalArgumentException("cdc_lakehouse.delta.commits: limit must be 1 or more, not " + limit);
    }
    TableIdentifier name = spark.sessionState().sqlParser().parseTableIdentifier(table);
    CatalogTable catalogTable = spark.sessionState().catalog().getTableMetadata(name);
    if (!DeltaTableUtils.isDeltaTable(catalogTable)) {
      throw new IllegalArgumentException(table + " is not a Delta table");
    }
    DeltaLog log = DeltaLog.forTable(spark, catalogTable);
    Snapshot snapshot = log.update(false, Option.empty(), Option.apply(catalogTable));
    long end = snapshot.version();
    if (end < 0) {
      return new InternalRow[0];
    }
    long start = Math.max(end - limit + 1, 0);
    DeltaCommitFileProvider files = DeltaCommitFileProvider.apply(snapshot);
    // as DeltaHistoryManager.getHistory: the versions from the one that enabled in-commit
    // timestamps on carry their own time; those before it, the file's, made monotonic
    long firstWithOwnTime = Long.MAX_VALUE;
    if ((Boolean) DeltaConfigs.IN_COMMIT_TIMESTAMPS_ENABLED().fromMetaData(snapshot.metadata())) {
      Option<DeltaHistoryManager.Commit> enabled =
          InCommitTimestampUtils.getValidatedICTEnablementInfo(snapshot.metadata());
      firstWithOwnTime = enabled.isDefined() ? enabled.get().version() : 0;
    }
    List<CommitInfo> commits = new ArrayList<>();
    if (start < firstWithOwnTime) {
      commits.addAll(monotonic(read(log, files, start, Math.min(end, firstWithOwnTime - 1), false)));
    }
    if (end >= firstWithOwnTime) {
      commits.addAll(read(log, files, Math.max(start, firstWithOwnTime), end, true));
    }
    InternalRow[] rows = new InternalRow[commits.size()];
    // the encoder's serializer is made per call: it is not thread-safe, and dbt's threads call this side by side
    ExpressionEncoder.Serializer<DeltaHistory> serializer = encoder().createSerializer();
    for (int i = 0; i < rows.length; i++) {
      rows[i] = serializer.apply(DeltaHistory.fromCommitInfo(commits.get(rows.length - 1 - i))).copy();
    }
    return rows;
  }

  /** The statement's own encoder of the rows (Delta's). */
  @SuppressWarnings("unchecked")
  private static ExpressionEncoder<DeltaHistory> encoder() {
    return (ExpressionEncoder<DeltaHistory>)
        org.apache.spark.sql.delta.implicits.package$.MODULE$.deltaHistoryEncoder();
  }

  /** The commit info of the versions {@code first..last}, oldest first, with their times. */
  private static List<CommitInfo> read(
      DeltaLog log, DeltaCommitFileProvider files, long first, long last, boolean ownTime)
      throws IOException {
    Configuration conf = log.newDeltaHadoopConf();
    LogStore store = log.store();
    FileSystem fs = log.logPath().getFileSystem(conf);
    List<CommitInfo> commits = new ArrayList<>();
    for (long version = first; version <= last; version++) {
      Path file = files.deltaFile(version);
      try {
        Option<CommitInfo> info = DeltaHistoryManager.getCommitInfoOpt(store, file, conf);
        long time = ownTime
            ? CommitInfo.getRequiredInCommitTimestamp(info, Long.toString(version))
            : fs.getFileStatus(file).getModificationTime();
        CommitInfo commit = info.isDefined() ? info.get() : CommitInfo.empty(Option.apply(version));
        commits.add(commit.withTimestamp(time));
      } catch (FileNotFoundException e) {
        // cleaned up while read, as Delta's own reader passes over it
      }
    }
    return commits;
  }

  /** Each time after the one before it, as Delta makes the file times of a log's commits. */
  private static List<CommitInfo> monotonic(List<CommitInfo> commits) {
    for (int i = 1; i < commits.size(); i++) {
      long before = commits.get(i - 1).getTimestamp();
      if (before >= commits.get(i).getTimestamp()) {
        commits.set(i, commits.get(i).withTimestamp(before + 1));
      }
    }
    return commits;
  }
}
