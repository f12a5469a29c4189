package cdc.lakehouse;

import java.io.IOException;
import java.io.StringWriter;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.unsafe.types.UTF8String;

import cdc.lakehouse.Message.NotCommon;
import cdc.lakehouse.Message.Obj;
import cdc.lakehouse.Message.Token;

/**
 * {@code cdc_lakehouse.json.parse_canal(value, key, topic, partition, offset)}: the common
 * canal-json message read in one pass, as macros/formats/canal_json.sql
 * ({@code _canal_family_parse} with Canal's field names) reads it.
 *
 * <p>Common here: a DML message ({@code type} INSERT / UPDATE / DELETE as a JSON string,
 * {@code isDdl} false or absent) whose {@code data} holds exactly one flat row, the only shape
 * where the SQL parser gives one row per record; {@code old} absent, null or an array of flat
 * rows (or nulls), of which an UPDATE overlays the first on its data row for the before image;
 * {@code pkNames} absent, null, empty, or distinct strings each spelled exactly as a column of
 * the row; {@code mysqlType} and {@code sqlType} both absent / null, or both naming the same
 * columns in the same order with a scalar for each (the SQL's zipped column_types); a table;
 * {@code es} absent or a plain integer of up to 15 digits; no {@code tableChanges}.
 *
 * <p>Everything else returns null and goes to the SQL parser: several rows or none, DDL, key
 * names that match the row's only case-insensitively or not at all, type maps of another
 * shape, nested values, a top-level name that differs from one the SQL parser reads only in
 * case (or its {@code _corrupt} column), malformed JSON.
 */
final class CanalFast {
  private static final JsonFactory FACTORY = new JsonFactory();

  /** The top-level fields the SQL parser reads (its typed schema), and its corrupt column. */
  private static final Set<String> FIELDS = new HashSet<>(Arrays.asList(
      "data", "type", "old", "database", "table", "isDdl", "sql", "pkNames", "mysqlType",
      "sqlType", "es", "tableChanges", "id", "gtid"));
  private static final Set<String> FIELDS_LOWER = new HashSet<>();

  static {
    for (String f : FIELDS) {
      FIELDS_LOWER.add(f.toLowerCase(Locale.ROOT));
    }
    FIELDS_LOWER.add("_corrupt");
  }

  private static final UTF8String INSERT = UTF8String.fromString("INSERT");
  private static final UTF8String UPDATE = UTF8String.fromString("UPDATE");
  private static final UTF8String DELETE = UTF8String.fromString("DELETE");

  private CanalFast() {}

  static InternalRow parse(UTF8String value, UTF8String key, UTF8String topic, int partition, long offset) {
    try {
      return read(value, partition, offset);
    } catch (NotCommon | RuntimeException e) {
      return null;
    }
  }

  private static InternalRow read(UTF8String value, int partition, long offset) throws NotCommon {
    Obj msg = Message.parseObject(value);
    for (String name : msg.names) {
      // a name the SQL parser's from_json might take for one of its fields (or its corrupt
      // column): left to it
      if (!FIELDS.contains(name) && FIELDS_LOWER.contains(name.toLowerCase(Locale.ROOT))) {
        throw NotCommon.INSTANCE;
      }
    }

    String type = Message.string(msg.get("type"));
    UTF8String op;
    if ("INSERT".equals(type)) {
      op = INSERT;
    } else if ("UPDATE".equals(type)) {
      op = UPDATE;
    } else if ("DELETE".equals(type)) {
      op = DELETE;
    } else {
      throw NotCommon.INSTANCE;
    }
    Object isDdl = msg.get("isDdl");
    if (isDdl != null && !"false".equals(Message.text(isDdl))) {
      throw NotCommon.INSTANCE;
    }
    if (msg.get("tableChanges") != null) {
      throw NotCommon.INSTANCE;
    }

    // data: exactly one flat, non-empty row
    List<?> data = list(msg.get("data"));
    if (data == null || data.size() != 1 || !(data.get(0) instanceof Obj)) {
      throw NotCommon.INSTANCE;
    }
    Obj row = (Obj) data.get(0);
    if (row.names.isEmpty()) {
      throw NotCommon.INSTANCE;
    }
    requireFlat(row);

    // old: absent, null, or an array of flat rows and nulls (an UPDATE overlays the first)
    Obj old = null;
    List<?> olds = list(msg.get("old"));
    if (olds != null) {
      for (Object o : olds) {
        if (o != null) {
          if (!(o instanceof Obj)) {
            throw NotCommon.INSTANCE;
          }
          requireFlat((Obj) o);
        }
      }
      if (op == UPDATE && !olds.isEmpty()) {
        old = (Obj) olds.get(0);
      }
    }

    GenericArrayData keyColumns = keyColumns(msg.get("pkNames"), row);

    String database = Message.text(msg.get("database"));
    String table = Message.text(msg.get("table"));
    if (table == null) {
      throw NotCommon.INSTANCE; // the SQL parser quarantines it
    }
    String es = Message.text(msg.get("es"));
    String id = Message.text(msg.get("id"));
    String gtid = Message.text(msg.get("gtid"));
    if (id != null && !id.isEmpty() && endsWithLineTerminator(id)) {
      throw NotCommon.INSTANCE; // regexp_extract's $ would match before it
    }
    Long eventTime = FastParsers.epochMicros(es); // digits only, or NotCommon
    UTF8String columnTypes = columnTypes(Message.object(msg.get("mysqlType")), Message.object(msg.get("sqlType")));

    Obj after = op == DELETE ? null : row;
    Obj before;
    if (op == INSERT) {
      before = null;
    } else if (op == DELETE || old == null || old.names.isEmpty()) {
      before = row;
    } else {
      before = overlay(row, old);
    }
    MapData rowMap = Message.imageMap(row);
    UTF8String rowText = toJson(row);

    GenericInternalRow out = FastParsers.newRow();
    out.update(FastParsers.ROW_INDEX, 0);
    out.update(FastParsers.VENDOR_OP, op);
    out.update(FastParsers.SOURCE_DATABASE, Message.utf8(database));
    out.update(FastParsers.SOURCE_SCHEMA, null);
    out.update(FastParsers.SOURCE_TABLE, Message.utf8(table));
    out.update(FastParsers.KEY_COLUMNS, keyColumns);
    out.update(FastParsers.KEY_VALUES, null);
    if (before == row) {
      out.update(FastParsers.BEFORE_VALUES, rowMap);
      out.update(FastParsers.BEFORE_IMAGE, rowText);
    } else if (before != null) {
      out.update(FastParsers.BEFORE_VALUES, Message.imageMap(before));
      out.update(FastParsers.BEFORE_IMAGE, toJson(before));
    }
    if (after != null) {
      out.update(FastParsers.AFTER_VALUES, rowMap);
      out.update(FastParsers.AFTER_IMAGE, rowText);
    }
    out.update(FastParsers.COLUMN_TYPES, columnTypes);
    out.update(FastParsers.EVENT_TIME, eventTime);
    String sequence = es == null ? id : id == null ? es : es + ":" + id;
    out.update(FastParsers.VENDOR_SEQUENCE,
        sequence == null || sequence.isEmpty() ? null : UTF8String.fromString(sequence));
    out.update(FastParsers.APPLY_ORDER, FastParsers.applyOrder(new String[] {es, id}, partition, offset, 0));
    out.update(FastParsers.TRANSACTION_ID, Message.utf8(gtid));
    out.update(FastParsers.STATEMENT, null);
    out.update(FastParsers.PARSE_ERROR, null);
    return out;
  }

  /** A JSON array (or null / absent); anything else is not common. */
  private static List<?> list(Object v) throws NotCommon {
    if (v == null || v instanceof List) {
      return (List<?>) v;
    }
    throw NotCommon.INSTANCE;
  }

  /** A row image of scalars only: strings, numbers, booleans, nulls. */
  private static void requireFlat(Obj image) throws NotCommon {
    for (Object v : image.values) {
      if (v != null && !(v instanceof String) && !(v instanceof Token)) {
        throw NotCommon.INSTANCE;
      }
    }
  }

  /**
   * key_columns as the SQL parser gives them for one row: no pkNames (absent or null), none;
   * empty pkNames, every column of the row (a multiset); else pkNames as they are when each
   * is a distinct string naming a column of the row exactly. Other spellings, repeats, nulls:
   * not common.
   */
  private static GenericArrayData keyColumns(Object pkNames, Obj row) throws NotCommon {
    List<?> names = list(pkNames);
    if (names == null) {
      return null;
    }
    if (names.isEmpty()) {
      return Message.names(row);
    }
    Object[] keys = new Object[names.size()];
    for (int i = 0; i < keys.length; i++) {
      Object k = names.get(i);
      if (!(k instanceof String) || !row.has((String) k)) {
        throw NotCommon.INSTANCE;
      }
      for (int j = 0; j < i; j++) {
        if (names.get(j).equals(k)) {
          throw NotCommon.INSTANCE;
        }
      }
      keys[i] = UTF8String.fromString((String) k);
    }
    return new GenericArrayData(keys);
  }

  /**
   * An UPDATE's before image: the row's columns, each with old's value where old names it,
   * then old's other columns, in old's order ({@code map_zip_with} of the SQL parser).
   */
  private static Obj overlay(Obj row, Obj old) {
    Obj before = new Obj();
    int n = row.names.size();
    for (int i = 0; i < n; i++) {
      String name = row.names.get(i);
      int j = old.names.indexOf(name);
      before.names.add(name);
      before.values.add(j >= 0 ? old.values.get(j) : row.values.get(i));
    }
    int m = old.names.size();
    for (int j = 0; j < m; j++) {
      String name = old.names.get(j);
      if (!row.has(name)) {
        before.names.add(name);
        before.values.add(old.values.get(j));
      }
    }
    return before;
  }

  /**
   * column_types: none without type maps; for mysqlType and sqlType naming the same columns in
   * the same order, each with a scalar, {@code {"col":{"type":..,"mysqlType":..,"sqlType":..}}}
   * as to_json of the zipped maps writes it (see {@link #toJson}), numbers as their tokens. Any other pair of type
   * maps takes the SQL's general form: not common.
   */
  private static UTF8String columnTypes(Obj names, Obj codes) throws NotCommon {
    if (names == null && codes == null) {
      return null;
    }
    if (names == null || codes == null || names.names.isEmpty() || !names.names.equals(codes.names)) {
      throw NotCommon.INSTANCE;
    }
    StringWriter out = new StringWriter(64 * names.names.size());
    try (JsonGenerator g = FACTORY.createGenerator(out)) {
      g.writeStartObject();
      int n = names.names.size();
      for (int i = 0; i < n; i++) {
        Object name = names.values.get(i);
        Object code = codes.values.get(i);
        g.writeFieldName(names.names.get(i));
        g.writeStartObject();
        g.writeFieldName("type");
        writeScalar(g, name);
        g.writeFieldName("mysqlType");
        writeScalar(g, name);
        g.writeFieldName("sqlType");
        writeScalar(g, code);
        g.writeEndObject();
      }
      g.writeEndObject();
    } catch (IOException e) {
      throw NotCommon.INSTANCE;
    }
    return UTF8String.fromString(out.toString());
  }

  /**
   * A row image as {@code cdc_map_to_json} writes its map: Spark's to_json, a generator on a
   * character writer (characters outside the BMP stay as they are, where the byte generator
   * behind {@link Message#imageText} escapes them as surrogate pairs), values as JSON
   * strings, then unmarked: numbers and booleans as their tokens.
   */
  private static UTF8String toJson(Obj image) throws NotCommon {
    StringWriter out = new StringWriter(256);
    try (JsonGenerator g = FACTORY.createGenerator(out)) {
      g.writeStartObject();
      int n = image.names.size();
      for (int i = 0; i < n; i++) {
        g.writeFieldName(image.names.get(i));
        Object v = image.values.get(i);
        if (v == null) {
          g.writeNull();
        } else {
          writeScalar(g, v);
        }
      }
      g.writeEndObject();
    } catch (IOException e) {
      throw NotCommon.INSTANCE;
    }
    return UTF8String.fromString(out.toString());
  }

  /** A string as a JSON string, a number or boolean as its token; null or nested: not common. */
  private static void writeScalar(JsonGenerator g, Object v) throws IOException, NotCommon {
    if (v instanceof String) {
      g.writeString((String) v);
    } else if (v instanceof Token) {
      g.writeRawValue(((Token) v).text);
    } else {
      throw NotCommon.INSTANCE;
    }
  }

  private static boolean endsWithLineTerminator(String s) {
    char c = s.charAt(s.length() - 1);
    return c == '\n' || c == '\r' || c == '\u0085' || c == '\u2028' || c == '\u2029';
  }
}
