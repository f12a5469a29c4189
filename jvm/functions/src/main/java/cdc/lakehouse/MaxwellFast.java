package cdc.lakehouse;

import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.unsafe.types.UTF8String;

import cdc.lakehouse.Message.NotCommon;
import cdc.lakehouse.Message.Obj;
import cdc.lakehouse.Message.Token;

/**
 * {@code cdc_lakehouse.json.parse_maxwell(value, key, topic, partition, offset)}: the common
 * Maxwell row read in one pass, as macros/formats/maxwell_json.sql reads it.
 *
 * <p>Common here: a row of type insert, update or delete with a flat {@code data} object (and,
 * for an update, a flat {@code old} object or none), {@code primary_key_columns} as distinct
 * names (or none), {@code primary_key} as a flat array (or none), a record key that is absent
 * or a flat object (Maxwell's default {"database":..,"table":..,"pk.<column>":..}), and
 * {@code ts} as a plain integer. Anything else returns null and the SQL parser reads it:
 * tombstones, bootstrap rows and markers, DDL, an update of a table without any key (the SQL
 * parser gives it two rows), nested values, a {@code _corrupt} member, malformed text, fields
 * of another JSON type than Maxwell writes, and positions or xoffsets ending in a line
 * terminator (where the SQL's {@code $} would match before it).
 */
final class MaxwellFast {
  private MaxwellFast() {}

  /** row_in_transaction of the last row of a transaction (commit=true, no xoffset). */
  private static final String COMMIT_ROW = "99999999999999999999";

  static InternalRow parse(UTF8String value, UTF8String key, UTF8String topic, int partition, long offset) {
    try {
      return read(value, key, partition, offset);
    } catch (NotCommon | RuntimeException e) {
      return null;
    }
  }

  private static InternalRow read(UTF8String value, UTF8String key, int partition, long offset)
      throws NotCommon {
    Obj msg = Message.parseObject(value);
    // the name of the parser's corrupt-record column: Spark (4.x) does not fill it from such a
    // member, but nothing common carries one, so it is left to the SQL parser
    if (msg.has("_corrupt")) {
      throw NotCommon.INSTANCE;
    }
    String type = Message.string(msg.get("type"));
    boolean update = "update".equals(type);
    if (!update && !"insert".equals(type) && !"delete".equals(type)) {
      throw NotCommon.INSTANCE;
    }
    Obj data = Message.object(msg.get("data"));
    if (data == null) {
      throw NotCommon.INSTANCE; // parse_error: without a data object
    }
    Obj old = Message.object(msg.get("old"));

    String database = Message.text(msg.get("database"));
    String table = Message.text(msg.get("table"));
    String ts = Message.text(msg.get("ts"));
    String xid = Message.text(msg.get("xid"));
    String xoffset = Message.text(msg.get("xoffset"));
    String commit = Message.text(msg.get("commit"));
    String position = Message.text(msg.get("position"));
    String sql = Message.text(msg.get("sql"));

    // key columns: primary_key_columns when it names any, else the record key's pk.* names
    List<Object> pkColumns = list(msg.get("primary_key_columns"));
    if (pkColumns != null) {
      for (int i = 0; i < pkColumns.size(); i++) {
        Object c = pkColumns.get(i);
        // a number would become a marked name; a null or a repeated name makes the SQL filter
        // the list and pair no primary_key: all left to the SQL parser
        if (!(c instanceof String) || pkColumns.subList(0, i).contains(c)) {
          throw NotCommon.INSTANCE;
        }
      }
      if (pkColumns.isEmpty()) {
        pkColumns = null;
      }
    }
    List<Object> pkValues = list(msg.get("primary_key"));
    MapData keyPkMap = keyPkMap(key);

    ArrayData keyColumns;
    MapData keyValues;
    if (pkColumns != null) {
      keyColumns = new GenericArrayData(utf8s(pkColumns, false));
      keyValues = pkValues != null && pkValues.size() == pkColumns.size()
          ? new ArrayBasedMapData(keyColumns, new GenericArrayData(utf8s(pkValues, true)))
          : keyPkMap;
    } else {
      keyColumns = keyPkMap == null ? new GenericArrayData(new Object[0]) : keyPkMap.keyArray();
      keyValues = keyPkMap;
    }
    if (update && keyColumns.numElements() == 0) {
      throw NotCommon.INSTANCE; // a multiset's update: the SQL parser adds the '<before image>' row
    }

    Obj before;
    if (update) {
      before = overlay(data, old);
    } else {
      before = "delete".equals(type) ? data : null;
    }
    Obj after = "delete".equals(type) ? null : data;

    String[] binlog = binlogFileAndPos(position);
    String rowInTransaction = null;
    if (position != null) {
      if (xoffset != null) {
        rowInTransaction = xoffset;
      } else if ("true".equals(commit)) {
        rowInTransaction = COMMIT_ROW;
      }
    }
    if (rowInTransaction != null && !rowInTransaction.isEmpty() && endsWithLineTerminator(rowInTransaction)) {
      throw NotCommon.INSTANCE; // the apply order's '^0*([0-9]{1,38})$' would match before it
    }

    GenericInternalRow out = FastParsers.newRow();
    out.update(FastParsers.ROW_INDEX, 0);
    out.update(FastParsers.VENDOR_OP, Message.utf8(type));
    out.update(FastParsers.SOURCE_DATABASE, Message.utf8(database));
    out.update(FastParsers.SOURCE_TABLE, Message.utf8(table));
    out.update(FastParsers.KEY_COLUMNS, keyColumns);
    out.update(FastParsers.KEY_VALUES, keyValues);
    out.update(FastParsers.BEFORE_VALUES, Message.imageMap(before));
    out.update(FastParsers.AFTER_VALUES, Message.imageMap(after));
    out.update(FastParsers.BEFORE_IMAGE, Message.mapJson(before));
    out.update(FastParsers.AFTER_IMAGE, Message.mapJson(after));
    out.update(FastParsers.EVENT_TIME, FastParsers.epochMicros(ts));
    out.update(FastParsers.VENDOR_SEQUENCE, Message.utf8(position));
    out.update(FastParsers.APPLY_ORDER,
        FastParsers.applyOrder(new String[] {binlog[0], binlog[1], rowInTransaction}, partition, offset, 0));
    out.update(FastParsers.TRANSACTION_ID, Message.utf8(xid));
    out.update(FastParsers.STATEMENT, Message.utf8(sql));
    return out;
  }

  /** A field that must be a JSON array (or null / absent). */
  @SuppressWarnings("unchecked")
  private static List<Object> list(Object v) throws NotCommon {
    if (v == null || v instanceof List) {
      return (List<Object>) v;
    }
    throw NotCommon.INSTANCE;
  }

  /**
   * Names or values as from_json(.., 'array<string>') gives them: strings as they are, numbers
   * and booleans marked ({@code marked}) and nulls null; anything nested is not common.
   */
  private static Object[] utf8s(List<Object> items, boolean marked) throws NotCommon {
    Object[] out = new Object[items.size()];
    for (int i = 0; i < out.length; i++) {
      Object v = items.get(i);
      if (v instanceof Token && marked) {
        out[i] = UTF8String.fromString(Message.MARK + ((Token) v).text);
      } else if (v == null || v instanceof String) {
        out[i] = Message.utf8(Message.wellFormed((String) v));
      } else {
        throw NotCommon.INSTANCE;
      }
    }
    return out;
  }

  /**
   * The record key's {@code pk.<column>} members as a map of column to marked value (the
   * SQL's transform_keys(map_filter(.., c like 'pk.%'), substr(c, 4))), in key order; no key,
   * null. A key that is not a flat object is not common.
   */
  private static MapData keyPkMap(UTF8String key) throws NotCommon {
    if (key == null) {
      return null;
    }
    Obj k = Message.parseObject(key);
    Message.imageMap(k); // every member a scalar, or not common
    Obj pk = new Obj();
    int n = k.names.size();
    for (int i = 0; i < n; i++) {
      String name = k.names.get(i);
      if (name.startsWith("pk.")) {
        pk.names.add(name.substring(3));
        pk.values.add(k.values.get(i));
      }
    }
    return Message.imageMap(pk);
  }

  /**
   * An update's before image: {@code data} with every column that {@code old} names given
   * its old value (null included), in data's order; old's other columns are dropped.
   */
  private static Obj overlay(Obj data, Obj old) throws NotCommon {
    if (old == null) {
      return data;
    }
    Message.imageMap(old); // every old value a scalar, or not common
    Obj before = new Obj();
    int n = data.names.size();
    for (int i = 0; i < n; i++) {
      String name = data.names.get(i);
      before.names.add(name);
      before.values.add(old.has(name) ? old.get(name) : data.values.get(i));
    }
    return before;
  }

  /**
   * {@code nullif(regexp_extract(position, '([0-9]+):[0-9]+$', 1), '')} and
   * {@code nullif(regexp_extract(position, ':([0-9]+)$', 1), '')}: the digits after the last
   * colon when they end the text, and the digits just before that colon.
   */
  private static String[] binlogFileAndPos(String position) throws NotCommon {
    String[] out = new String[2];
    if (position == null || position.isEmpty()) {
      return out;
    }
    if (endsWithLineTerminator(position)) {
      throw NotCommon.INSTANCE; // regexp_extract's $ would match before it
    }
    int end = position.length();
    int i = end;
    while (i > 0 && isDigit(position.charAt(i - 1))) {
      i--;
    }
    if (i == end || i == 0 || position.charAt(i - 1) != ':') {
      return out;
    }
    out[1] = position.substring(i, end);
    int colon = i - 1;
    int j = colon;
    while (j > 0 && isDigit(position.charAt(j - 1))) {
      j--;
    }
    if (j < colon) {
      out[0] = position.substring(j, colon);
    }
    return out;
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  private static boolean endsWithLineTerminator(String s) {
    char c = s.charAt(s.length() - 1);
    return c == '\n' || c == '\r' || c == '\u0085' || c == '\u2028' || c == '\u2029';
  }
}
