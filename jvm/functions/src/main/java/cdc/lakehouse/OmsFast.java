package cdc.lakehouse;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.unsafe.types.UTF8String;

import cdc.lakehouse.Message.NotCommon;
import cdc.lakehouse.Message.Obj;

/**
 * {@code cdc_lakehouse.json.parse_oms(value, key, topic, partition, offset)}: the common
 * oms-json message (OceanBase OMS "Default" serialization) read in one pass, as
 * macros/formats/oms_json.sql reads it.
 *
 * <p>Common here: {@code {"allMetaData": {..}, "prevStruct": .., "postStruct": .., "recordType":
 * ..}} with a string recordType INSERT, UPDATE, DELETE or ROW whose images are flat objects
 * (the one the operation needs present), or HEARTBEAT without images; allMetaData an object
 * whose fields the parser reads are strings, numbers, booleans or null; a timestamp that is a
 * plain integer; a key whose record_primary_key and record_primary_value agree. Anything else
 * (DDL, {@code __light_type} type metadata, nested values, other record types, a top-level
 * {@code _corrupt}, any message the SQL parser reports an error for) returns null: the SQL
 * parser reads it. The Kafka key is not read, as the SQL parser does not read it.
 */
final class OmsFast {
  private OmsFast() {}

  private static final String LIGHT_TYPE = "__light_type";
  private static final char KEY_SEPARATOR = '\u0001';

  static InternalRow parse(UTF8String value, UTF8String key, UTF8String topic, int partition, long offset) {
    try {
      return read(value, partition, offset);
    } catch (NotCommon | RuntimeException e) {
      return null;
    }
  }

  private static InternalRow read(UTF8String value, int partition, long offset) throws NotCommon {
    Obj msg = Message.parseObject(value);
    // the SQL parser's corrupt-record column: a message naming it would read as invalid JSON
    if (msg.has("_corrupt")) {
      throw NotCommon.INSTANCE;
    }
    String op = Message.string(msg.get("recordType"));
    if (op == null) {
      throw NotCommon.INSTANCE;
    }
    Obj prev = Message.object(msg.get("prevStruct"));
    Obj post = Message.object(msg.get("postStruct"));
    Obj meta = Message.object(msg.get("allMetaData"));
    if (meta == null) {
      throw NotCommon.INSTANCE;
    }
    switch (op) {
      case "INSERT":
      case "ROW":
      case "UPDATE":
        if (post == null) {
          throw NotCommon.INSTANCE; // "... without postStruct"
        }
        break;
      case "DELETE":
        if (prev == null) {
          throw NotCommon.INSTANCE; // "DELETE without prevStruct"
        }
        break;
      case "HEARTBEAT":
        if (prev != null || post != null) {
          throw NotCommon.INSTANCE;
        }
        break;
      default:
        throw NotCommon.INSTANCE; // DDL and anything else
    }
    // DefaultExtendColumnType's type metadata: column_types, and left out of the images
    if ((prev != null && prev.has(LIGHT_TYPE)) || (post != null && post.has(LIGHT_TYPE))) {
      throw NotCommon.INSTANCE;
    }

    String tableName = Message.text(meta.get("table_name"));
    String db = Message.text(meta.get("db"));
    String dbType = Message.text(meta.get("dbType"));
    String transId = Message.text(meta.get("transId"));
    String checkpoint = Message.text(meta.get("checkpoint"));
    String tsSeconds = Message.text(meta.get("timestamp"));
    String storeSequence = allDigits(Message.text(meta.get("storeDataSequence")));
    String primaryKey = Message.text(meta.get("record_primary_key"));
    String primaryValue = Message.text(meta.get("record_primary_value"));

    // filter(split(record_primary_key, '\u0001'), k -> k <> ''); split(record_primary_value, ..)
    List<String> keyNames = null;
    if (primaryKey != null) {
      keyNames = new ArrayList<>(4);
      for (String k : splitKey(primaryKey)) {
        if (!k.isEmpty()) {
          keyNames.add(k);
        }
      }
    }
    List<String> keyParts = primaryValue == null ? null : splitKey(primaryValue);
    int nKeys = keyNames == null ? 0 : keyNames.size();
    MapData keyValues = null;
    Object[] keyColumns;
    if (nKeys > 0) {
      for (int i = 0; i < nKeys; i++) {
        if (keyNames.indexOf(keyNames.get(i)) != i) {
          throw NotCommon.INSTANCE; // "record_primary_key repeats a column"
        }
      }
      if (keyParts != null && keyParts.size() != nKeys) {
        throw NotCommon.INSTANCE; // "record_primary_key names n columns but ..."
      }
      keyColumns = new Object[nKeys];
      for (int i = 0; i < nKeys; i++) {
        keyColumns[i] = UTF8String.fromString(keyNames.get(i));
      }
      if (keyParts != null) {
        Object[] vals = new Object[nKeys];
        for (int i = 0; i < nKeys; i++) {
          vals[i] = UTF8String.fromString(keyParts.get(i));
        }
        keyValues = new ArrayBasedMapData(new GenericArrayData(keyColumns), new GenericArrayData(vals));
      }
    } else {
      keyColumns = new Object[0];
    }

    boolean heartbeat = op.equals("HEARTBEAT");
    Obj before = heartbeat ? null : prev;
    Obj after = heartbeat ? null : post;

    GenericInternalRow out = FastParsers.newRow();
    out.update(FastParsers.ROW_INDEX, 0);
    out.update(FastParsers.VENDOR_OP, UTF8String.fromString(op));
    out.update(FastParsers.SOURCE_DATABASE, Message.utf8(sourceDatabase(db, dbType)));
    out.update(FastParsers.SOURCE_TABLE, Message.utf8(tableName));
    out.update(FastParsers.KEY_COLUMNS, new GenericArrayData(keyColumns));
    out.update(FastParsers.KEY_VALUES, keyValues);
    out.update(FastParsers.BEFORE_VALUES, values(before, keyNames, keyParts, keyValues != null));
    out.update(FastParsers.AFTER_VALUES, values(after, keyNames, keyParts, keyValues != null));
    out.update(FastParsers.BEFORE_IMAGE, Message.mapJson(before));
    out.update(FastParsers.AFTER_IMAGE, Message.mapJson(after));
    out.update(FastParsers.EVENT_TIME, FastParsers.epochMicros(tsSeconds));

    String sequence = firstNonNull(storeSequence, tsSeconds, checkpoint);
    out.update(FastParsers.VENDOR_SEQUENCE, Message.utf8(sequence));
    boolean fullLoad = op.equals("ROW");
    String seqDigits = firstNonNull(storeSequence, allDigits(tsSeconds), allDigits(checkpoint));
    String seq1 = null;
    String seq2 = null;
    if (!fullLoad && seqDigits != null) {
      if (seqDigits.length() > 10) {
        seq1 = seqDigits.substring(0, 10);
        seq2 = seqDigits.substring(10);
      } else {
        seq1 = seqDigits;
      }
    }
    UTF8String applyOrder = FastParsers.applyOrder(new String[] {seq1, seq2}, partition, offset, 0);
    if (fullLoad) {
      // phase 0: a full-load row sorts before every incremental change
      applyOrder = UTF8String.fromString("0" + applyOrder.toString().substring(1));
    }
    out.update(FastParsers.APPLY_ORDER, applyOrder);
    out.update(FastParsers.TRANSACTION_ID, Message.utf8(transId));
    return out;
  }

  /**
   * {@code s rlike '^[0-9]+$'} ? s : null. Java's {@code $} also matches before a final line
   * terminator: such a value is not common.
   */
  private static String allDigits(String s) throws NotCommon {
    if (s == null || s.isEmpty()) {
      return null;
    }
    char last = s.charAt(s.length() - 1);
    if (last == '\n' || last == '\r' || last == '\u0085' || last == '\u2028' || last == '\u2029') {
      throw NotCommon.INSTANCE;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') {
        return null;
      }
    }
    return s;
  }

  /** {@code split(s, '\u0001')}: every part, empty ones and trailing ones too. */
  private static List<String> splitKey(String s) {
    List<String> parts = new ArrayList<>(4);
    int start = 0;
    int i;
    while ((i = s.indexOf(KEY_SEPARATOR, start)) >= 0) {
      parts.add(s.substring(start, i));
      start = i + 1;
    }
    parts.add(s.substring(start));
    return parts;
  }

  /**
   * An image's values as the SQL parser gives them: the image as from_json reads it, and when
   * it lacks a key column (and the key's values are known), the image then the missing key
   * columns with their record_primary_value parts (map_concat); no image, none.
   */
  private static MapData values(Obj image, List<String> keyNames, List<String> keyParts, boolean hasKeyValues)
      throws NotCommon {
    MapData map = Message.imageMap(image);
    if (image == null || !hasKeyValues) {
      return map;
    }
    List<Integer> missing = null;
    for (int i = 0; i < keyNames.size(); i++) {
      if (!image.has(keyNames.get(i))) {
        if (missing == null) {
          missing = new ArrayList<>(keyNames.size());
        }
        missing.add(i);
      }
    }
    if (missing == null) {
      return map;
    }
    int n = map.numElements();
    Object[] keys = new Object[n + missing.size()];
    Object[] vals = new Object[n + missing.size()];
    for (int i = 0; i < n; i++) {
      keys[i] = map.keyArray().getUTF8String(i);
      vals[i] = map.valueArray().isNullAt(i) ? null : map.valueArray().getUTF8String(i);
    }
    for (int j = 0; j < missing.size(); j++) {
      int k = missing.get(j);
      keys[n + j] = UTF8String.fromString(keyNames.get(k));
      vals[n + j] = UTF8String.fromString(keyParts.get(k));
    }
    return new ArrayBasedMapData(new GenericArrayData(keys), new GenericArrayData(vals));
  }

  /**
   * {@code db} is {tenant}.{database} for OceanBase sources (dbType null, OB..., OCEANBASE):
   * the part after the first dot; other sources send the database itself.
   */
  private static String sourceDatabase(String db, String dbType) throws NotCommon {
    if (db == null || db.indexOf('.') < 0) {
      return db;
    }
    boolean oceanBase;
    if (dbType == null) {
      oceanBase = true;
    } else {
      // upper() of anything but ASCII depends on the locale and Unicode's special cases
      StringBuilder upper = new StringBuilder(dbType.length());
      for (int i = 0; i < dbType.length(); i++) {
        char c = dbType.charAt(i);
        if (c > 0x7f) {
          throw NotCommon.INSTANCE;
        }
        upper.append(c >= 'a' && c <= 'z' ? (char) (c - 'a' + 'A') : c);
      }
      String u = upper.toString();
      oceanBase = u.startsWith("OB") || u.equals("OCEANBASE");
    }
    return oceanBase ? db.substring(db.indexOf('.') + 1) : db;
  }

  private static String firstNonNull(String... values) {
    for (String v : values) {
      if (v != null) {
        return v;
      }
    }
    return null;
  }
}
