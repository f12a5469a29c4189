package cdc.lakehouse;

import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * What the fast parsers share: the row they return and the derived values every SQL parser
 * computes the same way (macros/utils/cdc_order.sql).
 *
 * <p>A fast parser ({@code cdc_lakehouse.json.parse_<format>}) reads the common message of its
 * format in one pass and returns the parser contract's columns (macros/cdc_change_columns.sql,
 * all but the ones copied from the bronze record), exactly as the SQL parser of that format
 * would; for any other message it returns null and silver hands the message to the SQL parser
 * (models/silver/cdc_parsed.sql). The SQL parsers stay the definition of every format: a test
 * runs both over every fixture and the bench's messages and requires the same rows
 * (tests/python/test_fast_parsers.py).
 */
final class FastParsers {
  private FastParsers() {}

  /** The returned row: macro cdc_fast_parse_type() in macros/cdc_change_columns.sql, in order. */
  static final StructType RESULT = StructType.fromDDL(
      "row_index int, vendor_op string, source_database string, source_schema string, "
      + "source_table string, key_columns array<string>, key_values map<string,string>, "
      + "before_values map<string,string>, after_values map<string,string>, before_image string, "
      + "after_image string, column_types string, event_time timestamp, vendor_sequence string, "
      + "apply_order string, transaction_id string, statement string, parse_error string");

  static final int ROW_INDEX = 0;
  static final int VENDOR_OP = 1;
  static final int SOURCE_DATABASE = 2;
  static final int SOURCE_SCHEMA = 3;
  static final int SOURCE_TABLE = 4;
  static final int KEY_COLUMNS = 5;
  static final int KEY_VALUES = 6;
  static final int BEFORE_VALUES = 7;
  static final int AFTER_VALUES = 8;
  static final int BEFORE_IMAGE = 9;
  static final int AFTER_IMAGE = 10;
  static final int COLUMN_TYPES = 11;
  static final int EVENT_TIME = 12;
  static final int VENDOR_SEQUENCE = 13;
  static final int APPLY_ORDER = 14;
  static final int TRANSACTION_ID = 15;
  static final int STATEMENT = 16;
  static final int PARSE_ERROR = 17;

  static GenericInternalRow newRow() {
    return new GenericInternalRow(RESULT.size());
  }

  static DataType resultType() {
    return RESULT;
  }

  /**
   * {@code cdc_apply_order('1', parts, partition, offset, row_index)}: each part written as its
   * digit count (two digits) and its digits without leading zeros; a part that is absent, not
   * all digits or longer than 38 digits counts as 0.
   */
  static UTF8String applyOrder(String[] parts, int partition, long offset, int rowIndex) {
    StringBuilder b = new StringBuilder(48).append('1');
    for (int i = 0; i < 3; i++) {
      appendPart(b, i < parts.length ? digits(parts[i]) : "0");
    }
    appendPart(b, Integer.toString(partition));
    appendPart(b, Long.toString(offset));
    appendPart(b, Integer.toString(rowIndex));
    return UTF8String.fromString(b.toString());
  }

  /** As {@code coalesce(nullif(regexp_extract(part, '^0*([0-9]{1,38})$', 1), ''), '0')}. */
  private static String digits(String part) {
    if (part == null) {
      return "0";
    }
    part = withoutFinalLineTerminator(part);
    if (part.isEmpty()) {
      return "0";
    }
    int firstSignificant = -1;
    for (int i = 0; i < part.length(); i++) {
      char c = part.charAt(i);
      if (c < '0' || c > '9') {
        return "0";
      }
      if (firstSignificant < 0 && c != '0') {
        firstSignificant = i;
      }
    }
    if (firstSignificant < 0) {
      return "0";
    }
    String d = part.substring(firstSignificant);
    return d.length() <= 38 ? d : "0";
  }

  /**
   * The text before the final line terminator, if any: where a Java regular expression's
   * {@code $} matches (after {@code \r\n} as one terminator, or one of \n \r U+0085 U+2028
   * U+2029), as in {@code regexp_extract}.
   */
  private static String withoutFinalLineTerminator(String s) {
    if (s.endsWith("\r\n")) {
      return s.substring(0, s.length() - 2);
    }
    if (!s.isEmpty()) {
      char c = s.charAt(s.length() - 1);
      if (c == '\n' || c == '\r' || c == '\u0085' || c == '\u2028' || c == '\u2029') {
        return s.substring(0, s.length() - 1);
      }
    }
    return s;
  }

  private static void appendPart(StringBuilder b, String digits) {
    b.append('.');
    if (digits.length() < 10) {
      b.append('0');
    }
    b.append(digits.length()).append(digits);
  }

  /**
   * {@code cdc_epoch_to_timestamp(value)} as microseconds: epoch seconds below 1e11, else
   * milliseconds. Only plain integers of up to 15 digits are read here; any other text (a
   * fraction, an exponent, spaces) is not common and goes to the SQL parser.
   */
  static Long epochMicros(String value) throws Message.NotCommon {
    if (value == null) {
      return null;
    }
    int start = value.startsWith("-") ? 1 : 0;
    int n = value.length() - start;
    if (n < 1 || n > 15) {
      throw Message.NotCommon.INSTANCE;
    }
    for (int i = start; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < '0' || c > '9') {
        throw Message.NotCommon.INSTANCE;
      }
    }
    long v = Long.parseLong(value);
    long millis = Math.abs(v) < 100_000_000_000L ? v * 1000L : v;
    return millis * 1000L;
  }
}
