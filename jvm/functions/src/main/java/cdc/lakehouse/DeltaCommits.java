package cdc.lakehouse;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.core.io.JsonStringEncoder;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
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
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampType;

import scala.Option;

/**
 * {@code describe history <table> limit <n>} without its Spark job: the same rows, read on the
 * driver. The dbt cursor of {@code lakehouse build} answers that statement with these
 * (ingestion/lakehouse/delta_history.py); the models read a table's newest commits at compile
 * time to know what is new (macros/cdc_watermark.sql), four to six times per build.
 *
 * <p>Why: Delta reads the commit files in a Spark job ({@code spark.range(...).mapPartitions},
 * then a local relation of the rows), where reading the few small files is a tiny part of
 * the job's cost. This reads them as that job's tasks do, with
 * Delta's own classes: the commit info of each version, its time the file's modification time
 * (made to increase with the version) or, for versions written with in-commit timestamps, the
 * commit's own; newest first. Each row is Delta's {@code DeltaHistory} as the command's encoder
 * writes it, given as JSON text by the schema: a long as a number, a timestamp as microseconds.
 */
public final class DeltaCommits {
  private DeltaCommits() {}

  /** The rows' schema, as JSON ({@code StructType.json}): the statement's output columns. */
  public static String schemaJson() {
    return encoder().schema().json();
  }

  /**
   * The newest {@code limit} commits of the Delta table {@code database.table}, newest first,
   * as a JSON array of rows (see the class), cut in pieces of at most {@link #PIECE} characters
   * to be joined by the caller. Throws when the table is not a Delta table or has no commit: the
   * caller then runs the statement itself, which says why.
   *
   * <p>Why pieces: py4j's answer to Python is written to its socket in parts of 8 KiB, and an
   * answer longer than that waits for its last part (TCP's delayed ACK against Nagle's
   * algorithm) longer than the reading takes. A few answers of one part each do
   * not wait. A commit's user metadata alone can be kilobytes (silver's names each topic).
   */
  public static String[] newest(SparkSession spark, String database, String table, int limit)
      throws IOException, AnalysisException {
    String json = newestJson(spark, database, table, limit);
    List<String> pieces = new ArrayList<>();
    for (int start = 0; start < json.length(); ) {
      int end = Math.min(json.length(), start + PIECE);
      // never between the two chars of one character outside the BMP: py4j sends each piece
      // as UTF-8, which has no form for half of one
      if (end < json.length() && Character.isHighSurrogate(json.charAt(end - 1))) {
        end--;
      }
      pieces.add(json.substring(start, end));
      start = end;
    }
    return pieces.toArray(new String[0]);
  }

  /** The most characters of one piece of {@link #newest}'s answer: under 8 KiB as UTF-8. */
  static final int PIECE = 2000;

  private static String newestJson(SparkSession spark, String database, String table, int limit)
      throws IOException, AnalysisException {
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be 1 or more, not " + limit);
    }
    CatalogTable catalogTable =
        spark.sessionState().catalog().getTableMetadata(new TableIdentifier(table, Option.apply(database)));
    if (!DeltaTableUtils.isDeltaTable(catalogTable)) {
      throw new IllegalArgumentException(database + "." + table + " is not a Delta table");
    }
    DeltaLog log = DeltaLog.forTable(spark, catalogTable);
    Snapshot snapshot = log.update(false, Option.empty(), Option.apply(catalogTable));
    long end = snapshot.version();
    if (end < 0) {
      throw new IllegalStateException(database + "." + table + " has no commit");
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
    StructType schema = encoder().schema();
    StringBuilder out = new StringBuilder("[");
    synchronized (DeltaCommits.class) {
      // one serializer, made once: making it (a generated projection) took most of a call
      if (serializer == null) {
        serializer = encoder().createSerializer();
      }
      for (int i = commits.size() - 1; i >= 0; i--) {
        if (out.length() > 1) {
          out.append(',');
        }
        writeStruct(out, serializer.apply(DeltaHistory.fromCommitInfo(commits.get(i))), schema);
      }
    }
    return out.append(']').toString();
  }

  /** The statement's own encoder of the rows (Delta's), whose serializer is not thread-safe. */
  private static ExpressionEncoder.Serializer<DeltaHistory> serializer;

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

  private static void writeStruct(StringBuilder out, InternalRow row, StructType type) {
    out.append('[');
    for (int i = 0; i < type.fields().length; i++) {
      if (i > 0) {
        out.append(',');
      }
      writeValue(out, row.isNullAt(i) ? null : row.get(i, type.fields()[i].dataType()), type.fields()[i].dataType());
    }
    out.append(']');
  }

  private static void writeValue(StringBuilder out, Object value, DataType type) {
    if (value == null) {
      out.append("null");
    } else if (type instanceof StringType) {
      out.append('"').append(JsonStringEncoder.getInstance().quoteAsString(value.toString())).append('"');
    } else if (type instanceof LongType || type instanceof TimestampType || type instanceof BooleanType) {
      out.append(value);
    } else if (type instanceof StructType) {
      writeStruct(out, (InternalRow) value, (StructType) type);
    } else if (type instanceof MapType) {
      MapData map = (MapData) value;
      out.append('[');
      writeArray(out, map.keyArray(), ((MapType) type).keyType());
      out.append(',');
      writeArray(out, map.valueArray(), ((MapType) type).valueType());
      out.append(']');
    } else if (type instanceof ArrayType) {
      writeArray(out, (ArrayData) value, ((ArrayType) type).elementType());
    } else {
      throw new IllegalStateException("no JSON for a value of type " + type.simpleString());
    }
  }

  private static void writeArray(StringBuilder out, ArrayData array, DataType type) {
    out.append('[');
    for (int i = 0; i < array.numElements(); i++) {
      if (i > 0) {
        out.append(',');
      }
      writeValue(out, array.isNullAt(i) ? null : array.get(i, type), type);
    }
    out.append(']');
  }
}
