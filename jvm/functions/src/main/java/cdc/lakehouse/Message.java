package cdc.lakehouse;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A CDC message read once, in one pass of Jackson's streaming parser, as a small tree whose
 * numbers and booleans keep the exact text of their tokens: the input of the fast parsers
 * ({@link FastParsers}).
 *
 * <p>Why a tree of our own and not Spark's {@code from_json}: Spark reads a nested object as
 * text by generating it again, so a message of three levels (envelope, payload, image) was
 * parsed three or four times, after the numbers were marked in another pass (JsonMarks). Here
 * every level is read once.
 *
 * <p>Only strict JSON is read: anything Jackson's defaults refuse (single quotes, comments,
 * NaN, trailing text), a name twice in one object, or a string holding U+0000 (which the
 * marked form of macros/utils/cdc_json.sql could not tell from a marked number) throws
 * {@link NotCommon}, and the message is left to the SQL parser of its format, which decides
 * what it means and what error to report.
 */
final class Message {
  private static final JsonFactory FACTORY = new JsonFactory();
  /** The marker of macros/utils/cdc_json.sql: a marked value is U+0000 then the token's text. */
  static final String MARK = "\u0000";

  private Message() {}

  /** A message the fast path does not read; the SQL parser does. Cheap: no stack trace. */
  static final class NotCommon extends Exception {
    private static final long serialVersionUID = 1L;
    static final NotCommon INSTANCE = new NotCommon();

    private NotCommon() {
      super("not a common message", null, false, false);
    }
  }

  /** A bare number or boolean: its token's text, exactly as the message spells it. */
  static final class Token {
    final String text;

    Token(String text) {
      this.text = text;
    }
  }

  /** A JSON object: names and values in message order (values: String, Token, Obj, List, null). */
  static final class Obj {
    final List<String> names = new ArrayList<>(16);
    final List<Object> values = new ArrayList<>(16);

    /** The value of {@code name}; null when absent or JSON null. */
    Object get(String name) {
      int n = names.size();
      for (int i = 0; i < n; i++) {
        if (names.get(i).equals(name)) {
          return values.get(i);
        }
      }
      return null;
    }

    boolean has(String name) {
      return names.contains(name);
    }
  }

  /** The message text as an object; NotCommon for anything else or anything after it. */
  static Obj parseObject(UTF8String text) throws NotCommon {
    if (text == null) {
      throw NotCommon.INSTANCE;
    }
    byte[] bytes = text.getBytes();
    try (JsonParser p = FACTORY.createParser(bytes, 0, bytes.length)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw NotCommon.INSTANCE;
      }
      Obj obj = readObject(p);
      if (p.nextToken() != null) {
        throw NotCommon.INSTANCE;
      }
      return obj;
    } catch (IOException | RuntimeException e) {
      throw NotCommon.INSTANCE;
    }
  }

  private static Obj readObject(JsonParser p) throws IOException, NotCommon {
    Obj obj = new Obj();
    JsonToken t;
    while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
      String name = p.currentName();
      if (name.contains(MARK) || obj.names.contains(name)) {
        throw NotCommon.INSTANCE;
      }
      obj.names.add(name);
      obj.values.add(readValue(p, p.nextToken()));
    }
    if (t != JsonToken.END_OBJECT) {
      throw NotCommon.INSTANCE;
    }
    return obj;
  }

  private static Object readValue(JsonParser p, JsonToken t) throws IOException, NotCommon {
    switch (t) {
      case VALUE_STRING: {
        String s = p.getText();
        if (s.contains(MARK)) {
          throw NotCommon.INSTANCE;
        }
        return s;
      }
      case VALUE_NUMBER_INT:
      case VALUE_NUMBER_FLOAT:
      case VALUE_TRUE:
      case VALUE_FALSE:
        return new Token(p.getText());
      case VALUE_NULL:
        return null;
      case START_OBJECT:
        return readObject(p);
      case START_ARRAY: {
        List<Object> items = new ArrayList<>();
        JsonToken e;
        while ((e = p.nextToken()) != JsonToken.END_ARRAY) {
          if (e == null) {
            throw NotCommon.INSTANCE;
          }
          items.add(readValue(p, e));
        }
        return items;
      }
      default:
        throw NotCommon.INSTANCE;
    }
  }

  // ---- values as the SQL parsers see them -------------------------------------------------

  /**
   * A scalar as {@code cdc_unmark_value} of its from_json text gives it: a string as it is, a
   * number or boolean as its token's text, null as null; an object or array is not common.
   */
  static String text(Object v) throws NotCommon {
    if (v == null || v instanceof String) {
      return (String) v;
    }
    if (v instanceof Token) {
      return ((Token) v).text;
    }
    throw NotCommon.INSTANCE;
  }

  /** A field that must be a JSON string (or null / absent): read without unmarking in SQL. */
  static String string(Object v) throws NotCommon {
    if (v == null || v instanceof String) {
      return (String) v;
    }
    throw NotCommon.INSTANCE;
  }

  /** A field that must be an object (or null / absent). */
  static Obj object(Object v) throws NotCommon {
    if (v == null || v instanceof Obj) {
      return (Obj) v;
    }
    throw NotCommon.INSTANCE;
  }

  static UTF8String utf8(String s) {
    return s == null ? null : UTF8String.fromString(s);
  }

  /**
   * A flat row image as {@code from_json(marked, 'map<string,string>')} gives it: strings as
   * they are, numbers and booleans marked (U+0000 then the token), nulls null, message order.
   * An image holding an object or array is not common.
   */
  static MapData imageMap(Obj image) throws NotCommon {
    if (image == null) {
      return null;
    }
    int n = image.names.size();
    Object[] keys = new Object[n];
    Object[] vals = new Object[n];
    for (int i = 0; i < n; i++) {
      keys[i] = UTF8String.fromString(image.names.get(i));
      Object v = image.values.get(i);
      if (v instanceof Token) {
        vals[i] = UTF8String.fromString(MARK + ((Token) v).text);
      } else if (v == null || v instanceof String) {
        vals[i] = utf8((String) v);
      } else {
        throw NotCommon.INSTANCE;
      }
    }
    return new ArrayBasedMapData(new GenericArrayData(keys), new GenericArrayData(vals));
  }

  /** The names of a map from {@link #imageMap} as {@code map_keys} gives them. */
  static GenericArrayData names(Obj image) {
    if (image == null) {
      return null;
    }
    Object[] keys = new Object[image.names.size()];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = UTF8String.fromString(image.names.get(i));
    }
    return new GenericArrayData(keys);
  }

  /**
   * A flat row image as exact JSON text: what Spark's reader writes back for an object read as
   * a string (Jackson's generator: compact, its escapes), with numbers and booleans as their
   * tokens (cdc_unmark_json of the marked text).
   */
  static UTF8String imageText(Obj image) throws NotCommon {
    if (image == null) {
      return null;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator g = FACTORY.createGenerator(out, JsonEncoding.UTF8)) {
      writeObject(g, image);
    } catch (IOException | RuntimeException e) {
      throw NotCommon.INSTANCE;
    }
    return UTF8String.fromBytes(out.toByteArray());
  }

  /** A generator of JSON text as Spark's writes it (Jackson's defaults, UTF-8). */
  static JsonGenerator generator(ByteArrayOutputStream out) throws IOException {
    return FACTORY.createGenerator(out, JsonEncoding.UTF8);
  }

  private static void writeObject(JsonGenerator g, Obj obj) throws IOException, NotCommon {
    g.writeStartObject();
    int n = obj.names.size();
    for (int i = 0; i < n; i++) {
      g.writeFieldName(obj.names.get(i));
      Object v = obj.values.get(i);
      if (v == null) {
        g.writeNull();
      } else if (v instanceof String) {
        g.writeString((String) v);
      } else if (v instanceof Token) {
        g.writeRawValue(((Token) v).text);
      } else {
        throw NotCommon.INSTANCE;
      }
    }
    g.writeEndObject();
  }

  /**
   * An image as {@code cdc_map_to_json} writes its map: Spark's to_json of a map (Jackson's
   * generator over a character writer: compact, its escapes, characters beyond the BMP as they
   * are, unlike {@link Message#imageText}, whose UTF-8 generator escapes them as surrogate
   * pairs) with numbers and booleans as their tokens. A string holding a lone surrogate is not
   * common (Spark would have turned it into '?' before writing).
   */
  static UTF8String mapJson(Obj image) throws NotCommon {
    if (image == null) {
      return null;
    }
    StringWriter out = new StringWriter(256);
    try (JsonGenerator g = FACTORY.createGenerator(out)) {
      g.writeStartObject();
      int n = image.names.size();
      for (int i = 0; i < n; i++) {
        g.writeFieldName(wellFormed(image.names.get(i)));
        Object v = image.values.get(i);
        if (v == null) {
          g.writeNull();
        } else if (v instanceof String) {
          g.writeString(wellFormed((String) v));
        } else if (v instanceof Token) {
          g.writeRawValue(((Token) v).text);
        } else {
          throw NotCommon.INSTANCE;
        }
      }
      g.writeEndObject();
    } catch (IOException | RuntimeException e) {
      throw NotCommon.INSTANCE;
    }
    return UTF8String.fromString(out.toString());
  }

  /** The string itself (null stays null); a lone surrogate is not common. */
  static String wellFormed(String s) throws NotCommon {
    if (s == null) {
      return null;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))) {
          throw NotCommon.INSTANCE;
        }
        i++;
      } else if (Character.isLowSurrogate(c)) {
        throw NotCommon.INSTANCE;
      }
    }
    return s;
  }
}
