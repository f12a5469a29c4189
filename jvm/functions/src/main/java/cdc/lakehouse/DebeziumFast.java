package cdc.lakehouse;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.unsafe.types.UTF8String;

import cdc.lakehouse.Message.NotCommon;
import cdc.lakehouse.Message.Obj;

/**
 * {@code cdc_lakehouse.json.parse_debezium(value, key, topic, partition, offset)}: the common
 * Debezium change event read in one pass, as macros/formats/debezium_json.sql reads it.
 *
 * <p>Common here: an envelope with a {@code schema} and a {@code payload} (JsonConverter's
 * default), with the payload only, or flat (debezium-flat), a string {@code op}, flat before / after images, a key that is a flat
 * object or {@code {"payload": {...}}}, a source position of MySQL (file / pos / row), OMS
 * ({@code pos} as offset@seconds), PostgreSQL (lsn) or Oracle (scn), and epoch times as plain
 * integers. Anything else (DDL without op, transaction markers, SQL Server's
 * change_lsn, nested values) returns null: the SQL parser reads it.
 */
final class DebeziumFast {
  private DebeziumFast() {}

  static InternalRow parse(UTF8String value, UTF8String key, UTF8String topic, int partition, long offset) {
    try {
      return read(value, key, topic, partition, offset);
    } catch (NotCommon | RuntimeException e) {
      return null;
    }
  }

  private static InternalRow read(UTF8String value, UTF8String key, UTF8String topic, int partition, long offset)
      throws NotCommon {
    if (value == null) {
      return tombstone(key, topic, partition, offset);
    }
    Obj msg = Message.parseObject(value);
    Object payload = msg.get("payload");
    Obj env = payload == null ? msg : Message.object(payload);
    UTF8String columnTypes = null;
    if (msg.get("schema") != null) {
      if (payload == null) {
        throw NotCommon.INSTANCE;
      }
      columnTypes = columnTypes(Message.object(msg.get("schema")));
    }

    String op = Message.string(env.get("op"));
    if (op == null || op.equals("BEGIN") || op.equals("END")) {
      throw NotCommon.INSTANCE;
    }
    String ddl = Message.string(env.get("ddl"));
    String databaseName = Message.string(env.get("databaseName"));
    if (env.get("position") != null) {
      throw NotCommon.INSTANCE;
    }

    Obj src = Message.object(env.get("source"));
    String db = null;
    String schema = null;
    String table = null;
    String file = null;
    String pos = null;
    String row = null;
    String lsn = null;
    String scn = null;
    String srcTs = null;
    String gtid = null;
    String txId = null;
    if (src != null) {
      if (src.get("change_lsn") != null) {
        throw NotCommon.INSTANCE;
      }
      db = Message.text(src.get("db"));
      schema = Message.text(src.get("schema"));
      table = Message.text(src.get("table"));
      file = Message.text(src.get("file"));
      pos = Message.text(src.get("pos"));
      row = Message.text(src.get("row"));
      lsn = Message.text(src.get("lsn"));
      scn = Message.text(src.get("scn"));
      srcTs = Message.text(src.get("ts_ms"));
      gtid = Message.text(src.get("gtid"));
      txId = Message.text(src.get("txId"));
    }

    String transactionId = null;
    Obj transaction = Message.object(env.get("transaction"));
    if (transaction != null) {
      transactionId = Message.string(transaction.get("id"));
    }

    Obj before = Message.object(env.get("before"));
    Obj after = Message.object(env.get("after"));
    MapData keyValues = keyValues(key);

    String[] topicParts = topic == null ? new String[0] : topic.toString().split("\\.", -1);
    GenericInternalRow out = FastParsers.newRow();
    out.update(FastParsers.ROW_INDEX, 0);
    out.update(FastParsers.VENDOR_OP, Message.utf8(op));
    out.update(FastParsers.SOURCE_DATABASE, Message.utf8(firstNonNull(db, databaseName, part(topicParts, 1))));
    out.update(FastParsers.SOURCE_SCHEMA, Message.utf8(schema));
    out.update(FastParsers.SOURCE_TABLE, Message.utf8(firstNonNull(table, part(topicParts, 2))));
    out.update(FastParsers.KEY_COLUMNS, keyValues == null ? null : keyValues.keyArray());
    out.update(FastParsers.KEY_VALUES, keyValues);
    out.update(FastParsers.BEFORE_VALUES, Message.imageMap(before));
    out.update(FastParsers.AFTER_VALUES, Message.imageMap(after));
    out.update(FastParsers.BEFORE_IMAGE, Message.imageText(before));
    out.update(FastParsers.AFTER_IMAGE, Message.imageText(after));
    out.update(FastParsers.COLUMN_TYPES, columnTypes);
    String time = srcTs != null && !srcTs.equals("0") ? srcTs : Message.text(env.get("ts_ms"));
    out.update(FastParsers.EVENT_TIME, FastParsers.epochMicros(time));

    boolean hasFile = file != null && !file.isEmpty();
    if (hasFile && endsWithLineTerminator(file)) {
      throw NotCommon.INSTANCE; // regexp_extract's $ would match before it
    }
    String sequence = String.join(":", nonNull(hasFile ? file : null, pos, row, lsn, scn));
    out.update(FastParsers.VENDOR_SEQUENCE, sequence.isEmpty() ? null : UTF8String.fromString(sequence));
    String seq1;
    String seq2 = null;
    String seq3 = null;
    if (pos != null && pos.contains("@")) {
      seq1 = splitPart(pos, 2);
      seq2 = splitPart(pos, 1);
    } else if (hasFile) {
      seq1 = trailingDigits(file);
      seq2 = pos;
    } else if (lsn != null) {
      seq1 = lsn;
    } else if (scn != null) {
      seq1 = scn;
    } else {
      seq1 = pos;
    }
    if (hasFile) {
      seq3 = row;
    }
    out.update(FastParsers.APPLY_ORDER,
        FastParsers.applyOrder(new String[] {seq1, seq2, seq3}, partition, offset, 0));
    out.update(FastParsers.TRANSACTION_ID, Message.utf8(firstNonNull(transactionId, gtid, txId)));
    out.update(FastParsers.STATEMENT, Message.utf8(ddl));
    return out;
  }

  /**
   * The null-value record that follows a delete (tombstones.on.delete): a control event
   * carrying the record key, its table from the topic name, as the SQL parser gives it.
   */
  private static InternalRow tombstone(UTF8String key, UTF8String topic, int partition, long offset)
      throws NotCommon {
    MapData keyValues = keyValues(key);
    String[] topicParts = topic == null ? new String[0] : topic.toString().split("\\.", -1);
    GenericInternalRow out = FastParsers.newRow();
    out.update(FastParsers.ROW_INDEX, 0);
    out.update(FastParsers.VENDOR_OP, UTF8String.fromString("<tombstone>"));
    out.update(FastParsers.SOURCE_DATABASE, Message.utf8(part(topicParts, 1)));
    out.update(FastParsers.SOURCE_TABLE, Message.utf8(part(topicParts, 2)));
    out.update(FastParsers.KEY_COLUMNS, keyValues == null ? null : keyValues.keyArray());
    out.update(FastParsers.KEY_VALUES, keyValues);
    out.update(FastParsers.APPLY_ORDER, FastParsers.applyOrder(new String[] {null, null, null}, partition, offset, 0));
    return out;
  }

  /**
   * The column types of a JsonConverter schema as the SQL parser writes them: the fields of the
   * schema's {@code after} field, as {@code to_json} of a map of field name to
   * {@code struct(type, name, parameters)} (null members left out, message order).
   */
  private static UTF8String columnTypes(Obj schema) throws NotCommon {
    Object fields = schema.get("fields");
    if (fields == null) {
      return null;
    }
    if (!(fields instanceof java.util.List)) {
      throw NotCommon.INSTANCE;
    }
    Obj after = null;
    for (Object f : (java.util.List<?>) fields) {
      Obj field = Message.object(f);
      if (field != null && "after".equals(Message.string(field.get("field")))) {
        if (after != null) {
          throw NotCommon.INSTANCE;
        }
        after = field;
      }
    }
    if (after == null) {
      return null;
    }
    Object columns = after.get("fields");
    if (columns == null) {
      return null;
    }
    if (!(columns instanceof java.util.List)) {
      throw NotCommon.INSTANCE;
    }
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(256);
    java.util.Set<String> seen = new java.util.HashSet<>();
    try (com.fasterxml.jackson.core.JsonGenerator g = Message.generator(out)) {
      g.writeStartObject();
      for (Object c : (java.util.List<?>) columns) {
        Obj column = Message.object(c);
        if (column == null) {
          throw NotCommon.INSTANCE;
        }
        String name = Message.string(column.get("field"));
        if (name == null || !seen.add(name)) {
          throw NotCommon.INSTANCE;
        }
        g.writeFieldName(name);
        g.writeStartObject();
        writeType(g, column);
        Object items = column.get("items");
        if (items != null) {
          // an array's element type: the SQL parser keeps the type, name and parameters of `items`
          Obj element = Message.object(items);
          if (element == null) {
            throw NotCommon.INSTANCE;
          }
          g.writeFieldName("items");
          g.writeStartObject();
          writeType(g, element);
          g.writeEndObject();
        }
        g.writeEndObject();
      }
      g.writeEndObject();
    } catch (java.io.IOException e) {
      throw NotCommon.INSTANCE;
    }
    return UTF8String.fromBytes(out.toByteArray());
  }

  /** The type, name and parameters members of a schema field (null ones left out), in that order. */
  private static void writeType(com.fasterxml.jackson.core.JsonGenerator g, Obj column)
      throws NotCommon, java.io.IOException {
    String type = Message.string(column.get("type"));
    String typeName = Message.string(column.get("name"));
    Obj parameters = Message.object(column.get("parameters"));
    if (type != null) {
      g.writeStringField("type", type);
    }
    if (typeName != null) {
      g.writeStringField("name", typeName);
    }
    if (parameters != null) {
      g.writeFieldName("parameters");
      g.writeStartObject();
      for (int i = 0; i < parameters.names.size(); i++) {
        g.writeFieldName(parameters.names.get(i));
        Object v = parameters.values.get(i);
        if (v == null) {
          g.writeNull();
        } else if (v instanceof String) {
          g.writeString((String) v);
        } else if (v instanceof Message.Token) {
          g.writeRawValue(((Message.Token) v).text);
        } else {
          throw NotCommon.INSTANCE;
        }
      }
      g.writeEndObject();
    }
  }

  /**
   * The record key as the SQL parser maps it: {@code {"payload": {...}}} (JsonConverter with a
   * schema) gives its payload, a flat object itself; no key, none.
   */
  private static MapData keyValues(UTF8String key) throws NotCommon {
    if (key == null) {
      return null;
    }
    Obj k = Message.parseObject(key);
    Object payload = k.get("payload");
    if (payload != null) {
      return Message.imageMap(Message.object(payload));
    }
    if (k.has("payload") || k.has("schema")) {
      throw NotCommon.INSTANCE;
    }
    return Message.imageMap(k);
  }

  private static String firstNonNull(String... values) {
    for (String v : values) {
      if (v != null) {
        return v;
      }
    }
    return null;
  }

  private static String[] nonNull(String... values) {
    int n = 0;
    for (String v : values) {
      if (v != null) {
        n++;
      }
    }
    String[] out = new String[n];
    n = 0;
    for (String v : values) {
      if (v != null) {
        out[n++] = v;
      }
    }
    return out;
  }

  /** {@code split(topic, '[.]')[i]}: null past the end. */
  private static String part(String[] parts, int i) {
    return i < parts.length ? parts[i] : null;
  }

  /** {@code split_part(s, '@', n)} for n of 1 or 2: '' past the end. */
  private static String splitPart(String s, int n) {
    String[] parts = s.split("@", -1);
    return n <= parts.length ? parts[n - 1] : "";
  }

  private static boolean endsWithLineTerminator(String s) {
    char c = s.charAt(s.length() - 1);
    return c == '\n' || c == '\r' || c == '\u0085' || c == '\u2028' || c == '\u2029';
  }

  /** {@code regexp_extract(s, '([0-9]+)$', 1)}: the trailing digits, '' when none. */
  private static String trailingDigits(String s) {
    int i = s.length();
    while (i > 0 && s.charAt(i - 1) >= '0' && s.charAt(i - 1) <= '9') {
      i--;
    }
    return s.substring(i);
  }
}
