package cdc.lakehouse;

import java.util.Arrays;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The project's JVM functions as a Spark function catalog: SQL calls them as
 * {@code cdc_lakehouse.json.mark(text)}, {@code cdc_lakehouse.json.unmark(text)},
 * {@code cdc_lakehouse.json.shape(text)}, {@code cdc_lakehouse.json.utf8_text(bytes)} and the fast
 * parsers ({@code parse_debezium}, ...) in a session
 * with {@code spark.sql.catalog.cdc_lakehouse=cdc.lakehouse.JsonFunctions} and this jar on its
 * classpath (ingestion/lakehouse/session.py and profiles/profiles.yml set both).
 *
 * <p>Why a function catalog (Spark's public connector API) and not a Hive UDF or a UDF
 * registered in code: it is a plain setting, so every session of a Thrift server has it too,
 * and Spark compiles the call into a direct call of the static {@code invoke} method on the
 * UTF-8 bytes (no conversion to Java strings, no reflection per row).
 *
 * <p>And one procedure, {@code call cdc_lakehouse.delta.commits(table, limit)}: a Delta table's
 * newest commits, read on the driver ({@link DeltaCommits}).
 */
public final class JsonFunctions implements FunctionCatalog, ProcedureCatalog {
  private static final String[] NAMESPACE = {"json"};
  private static final String[] DELTA_NAMESPACE = {"delta"};
  private String catalogName;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.catalogName = name;
  }

  @Override
  public String name() {
    return catalogName;
  }

  @Override
  public String[] defaultNamespace() {
    return NAMESPACE.clone();
  }

  @Override
  public Identifier[] listFunctions(String[] namespace) {
    return new Identifier[] {
      Identifier.of(NAMESPACE, "mark"), Identifier.of(NAMESPACE, "unmark"), Identifier.of(NAMESPACE, "shape"),
      Identifier.of(NAMESPACE, "parse_debezium"), Identifier.of(NAMESPACE, "parse_maxwell"),
      Identifier.of(NAMESPACE, "parse_oms"), Identifier.of(NAMESPACE, "parse_canal"),
      Identifier.of(NAMESPACE, "utf8_text")
    };
  }

  @Override
  public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
    if (Arrays.equals(ident.namespace(), NAMESPACE)) {
      if (ident.name().equals("mark")) {
        return new OneString(new Mark());
      }
      if (ident.name().equals("unmark")) {
        return new OneString(new Unmark());
      }
      if (ident.name().equals("shape")) {
        return new OneString(new Shape());
      }
      if (ident.name().equals("utf8_text")) {
        return new OneBinary();
      }
      switch (ident.name()) {
        case "parse_debezium":
          return new RecordParser(new ParseDebezium());
        case "parse_maxwell":
          return new RecordParser(new ParseMaxwell());
        case "parse_oms":
          return new RecordParser(new ParseOms());
        case "parse_canal":
          return new RecordParser(new ParseCanal());
        default:
          break;
      }
    }
    throw new NoSuchFunctionException(ident);
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    return Arrays.equals(namespace, DELTA_NAMESPACE)
        ? new Identifier[] {Identifier.of(DELTA_NAMESPACE, "commits")}
        : new Identifier[0];
  }

  @Override
  public UnboundProcedure loadProcedure(Identifier ident) {
    if (Arrays.equals(ident.namespace(), DELTA_NAMESPACE) && ident.name().equals("commits")) {
      return new DeltaCommits();
    }
    throw new UnsupportedOperationException("cdc_lakehouse has no procedure " + ident + ": only delta.commits");
  }

  /** Binds a call with exactly one string argument, with a message naming the function. */
  private static final class OneString implements UnboundFunction {
    private static final long serialVersionUID = 1L;

    private final StringToString bound;

    OneString(StringToString bound) {
      this.bound = bound;
    }

    @Override
    public BoundFunction bind(StructType inputType) {
      StructField[] fields = inputType.fields();
      if (fields.length != 1 || !(fields[0].dataType() instanceof StringType)) {
        throw new UnsupportedOperationException(
            "cdc_lakehouse.json." + bound.name() + " takes one string, got " + inputType.simpleString());
      }
      return bound;
    }

    @Override
    public String description() {
      return bound.name() + "(string) -> string: exact JSON handling of macros/utils/cdc_json.sql";
    }

    @Override
    public String name() {
      return bound.name();
    }
  }

  /** Binds {@code utf8_text} to exactly one binary argument, with a message naming it. */
  private static final class OneBinary implements UnboundFunction {
    private static final long serialVersionUID = 1L;

    @Override
    public BoundFunction bind(StructType inputType) {
      StructField[] fields = inputType.fields();
      if (fields.length != 1 || !(fields[0].dataType() instanceof BinaryType)) {
        throw new UnsupportedOperationException(
            "cdc_lakehouse.json.utf8_text takes one binary, got " + inputType.simpleString());
      }
      return new Utf8Text();
    }

    @Override
    public String description() {
      return "utf8_text(binary) -> string: the bytes as text when they are valid UTF-8, else null";
    }

    @Override
    public String name() {
      return "utf8_text";
    }
  }

  /**
   * {@code cdc_lakehouse.json.utf8_text(bytes)}: the bytes as a string when they are valid UTF-8,
   * else null; what {@code case when is_valid_utf8(cast(b as string)) then cast(b as string) end}
   * gives. Spark's check decodes every code point; a Kafka message is almost always ASCII, which
   * this tests eight bytes at a time, leaving only the rest to Spark's own check (the same
   * answer by construction). It was a tenth of the parse's CPU time.
   */
  public static final class Utf8Text implements ScalarFunction<UTF8String> {
    private static final long serialVersionUID = 1L;
    private static final long HIGH_BITS = 0x8080808080808080L;

    @Override
    public DataType[] inputTypes() {
      return new DataType[] {DataTypes.BinaryType};
    }

    @Override
    public DataType resultType() {
      return DataTypes.StringType;
    }

    @Override
    public String name() {
      return "utf8_text";
    }

    /** Spark's "magic method": called directly from generated code, nulls included. */
    public static UTF8String invoke(byte[] bytes) {
      if (bytes == null) {
        return null;
      }
      UTF8String text = UTF8String.fromBytes(bytes);
      return isAscii(bytes) || text.isValid() ? text : null;
    }

    static boolean isAscii(byte[] bytes) {
      int i = 0;
      int whole = bytes.length & ~7;
      for (; i < whole; i += 8) {
        if ((Platform.getLong(bytes, Platform.BYTE_ARRAY_OFFSET + i) & HIGH_BITS) != 0) {
          return false;
        }
      }
      for (; i < bytes.length; i++) {
        if (bytes[i] < 0) {
          return false;
        }
      }
      return true;
    }
  }

  /** A string -> string function; null in, null out. */
  private abstract static class StringToString implements ScalarFunction<UTF8String> {
    private static final long serialVersionUID = 1L;

    @Override
    public DataType[] inputTypes() {
      return new DataType[] {DataTypes.StringType};
    }

    @Override
    public DataType resultType() {
      return DataTypes.StringType;
    }
  }

  /** {@code cdc_lakehouse.json.mark(text)}: {@link JsonMarks#mark}. */
  public static final class Mark extends StringToString {
    private static final long serialVersionUID = 1L;

    /** Spark's "magic method": called directly from generated code. */
    public static UTF8String invoke(UTF8String text) {
      return JsonMarks.mark(text);
    }

    @Override
    public String name() {
      return "mark";
    }
  }

  /** {@code cdc_lakehouse.json.unmark(text)}: {@link JsonMarks#unmark}. */
  public static final class Unmark extends StringToString {
    private static final long serialVersionUID = 1L;

    /** Spark's "magic method": called directly from generated code. */
    public static UTF8String invoke(UTF8String text) {
      return JsonMarks.unmark(text);
    }

    @Override
    public String name() {
      return "unmark";
    }
  }

  /** {@code cdc_lakehouse.json.shape(text)}: {@link JsonShapes#shape}. */
  public static final class Shape extends StringToString {
    private static final long serialVersionUID = 1L;

    /** Spark's "magic method": called directly from generated code. */
    public static UTF8String invoke(UTF8String text) {
      return JsonShapes.shape(text);
    }

    @Override
    public String name() {
      return "shape";
    }
  }

  /**
   * Binds a fast parser: (value string, key string, topic string, partition int, offset bigint)
   * -> the parser contract's row, or null for a message the SQL parser must read.
   */
  private static final class RecordParser implements UnboundFunction {
    private static final long serialVersionUID = 1L;
    private static final DataType[] INPUTS = {
      DataTypes.StringType, DataTypes.StringType, DataTypes.StringType, DataTypes.IntegerType, DataTypes.LongType
    };

    private final ScalarFunction<InternalRow> bound;

    RecordParser(ScalarFunction<InternalRow> bound) {
      this.bound = bound;
    }

    @Override
    public BoundFunction bind(StructType inputType) {
      StructField[] fields = inputType.fields();
      boolean fits = fields.length == INPUTS.length;
      for (int i = 0; fits && i < fields.length; i++) {
        fits = fields[i].dataType().equals(INPUTS[i]);
      }
      if (!fits) {
        throw new UnsupportedOperationException("cdc_lakehouse.json." + bound.name()
            + " takes (value string, key string, topic string, partition int, offset bigint), got "
            + inputType.simpleString());
      }
      return bound;
    }

    @Override
    public String description() {
      return bound.name() + "(value, key, topic, partition, offset): the common message of a format, parsed in one pass";
    }

    @Override
    public String name() {
      return bound.name();
    }
  }

  /** A fast parser: the five record columns in, the parser contract's row (or null) out. */
  private abstract static class FastParser implements ScalarFunction<InternalRow> {
    private static final long serialVersionUID = 1L;

    @Override
    public DataType[] inputTypes() {
      return RecordParser.INPUTS.clone();
    }

    @Override
    public DataType resultType() {
      return FastParsers.RESULT;
    }
  }

  /** {@code cdc_lakehouse.json.parse_debezium(...)}: {@link DebeziumFast}. */
  public static final class ParseDebezium extends FastParser {
    private static final long serialVersionUID = 1L;

    /** Spark's "magic method": called directly from generated code. */
    public static InternalRow invoke(UTF8String value, UTF8String key, UTF8String topic, int partition, long offset) {
      return DebeziumFast.parse(value, key, topic, partition, offset);
    }

    @Override
    public String name() {
      return "parse_debezium";
    }
  }

  /** {@code cdc_lakehouse.json.parse_maxwell(...)}: {@link MaxwellFast}. */
  public static final class ParseMaxwell extends FastParser {
    private static final long serialVersionUID = 1L;

    /** Spark's "magic method": called directly from generated code. */
    public static InternalRow invoke(UTF8String value, UTF8String key, UTF8String topic, int partition, long offset) {
      return MaxwellFast.parse(value, key, topic, partition, offset);
    }

    @Override
    public String name() {
      return "parse_maxwell";
    }
  }

  /** {@code cdc_lakehouse.json.parse_oms(...)}: {@link OmsFast}. */
  public static final class ParseOms extends FastParser {
    private static final long serialVersionUID = 1L;

    /** Spark's "magic method": called directly from generated code. */
    public static InternalRow invoke(UTF8String value, UTF8String key, UTF8String topic, int partition, long offset) {
      return OmsFast.parse(value, key, topic, partition, offset);
    }

    @Override
    public String name() {
      return "parse_oms";
    }
  }

  /** {@code cdc_lakehouse.json.parse_canal(...)}: {@link CanalFast}. */
  public static final class ParseCanal extends FastParser {
    private static final long serialVersionUID = 1L;

    /** Spark's "magic method": called directly from generated code. */
    public static InternalRow invoke(UTF8String value, UTF8String key, UTF8String topic, int partition, long offset) {
      return CanalFast.parse(value, key, topic, partition, offset);
    }

    @Override
    public String name() {
      return "parse_canal";
    }
  }
}
