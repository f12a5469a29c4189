package cdc.lakehouse;

import java.util.Arrays;

import org.apache.spark.unsafe.types.UTF8String;

/**
 * The shape of a row image as one pass over its UTF-8 bytes: its columns in order, and which of
 * them are null.
 *
 * <p>gold.cdc_table_columns needs only that of every image (which columns a table has, and
 * whether a change gave each a value), and millions of images share a handful of shapes. Parsing
 * each image into a map to learn it took most of that model's time; this function gives the
 * shape as a small JSON object, {@code {"id":1,"note":null}} (the member names exactly as the
 * image spells them, {@code 1} for any value but null), so that images are grouped by it first
 * and only the few distinct shapes are parsed.
 *
 * <p>The contract (macro cdc_image_shape, tests/python/test_jvm_functions.py): parsing the shape
 * with {@code from_json(shape, 'map<string,string>')} gives the same keys, in the same order, and
 * nulls at the same keys as parsing the image. So the image is checked as strict JSON (RFC 8259:
 * no single quotes, NaN, leading zeros, raw control characters or invalid UTF-8, nothing after
 * the object), which Spark's reader accepts; anything else, even what Spark's more lenient
 * reader might accept, is returned as it is, and the caller parses it as before.
 */
public final class JsonShapes {
  /** Deeper nesting is left to Spark's reader, which has a limit of its own. */
  private static final int MAX_DEPTH = 500;
  private static final byte[] ONE = {'1'};
  private static final byte[] NULL = {'n', 'u', 'l', 'l'};
  private static final byte[] TRUE = {'t', 'r', 'u', 'e'};
  private static final byte[] FALSE = {'f', 'a', 'l', 's', 'e'};

  private JsonShapes() {}

  /** The shape of a JSON object text; the text itself when it is not strict JSON; null for null. */
  public static UTF8String shape(UTF8String text) {
    if (text == null) {
      return null;
    }
    byte[] shape = new Scanner(text.getBytes()).objectShape();
    return shape == null ? text : UTF8String.fromBytes(shape);
  }

  /** A recursive-descent check of strict JSON that writes the shape of the outer object. */
  private static final class Scanner {
    private final byte[] b;
    private int i;
    private byte[] out;
    private int len;

    Scanner(byte[] b) {
      this.b = b;
    }

    /** The shape, or null when the text is not one strict JSON object. */
    byte[] objectShape() {
      out = new byte[Math.min(b.length, 4096) + 16];
      skipSpace();
      if (!at('{') || !object(0, true)) {
        return null;
      }
      skipSpace();
      return i == b.length ? Arrays.copyOf(out, len) : null;
    }

    private boolean at(char c) {
      return i < b.length && b[i] == c;
    }

    private void skipSpace() {
      while (i < b.length && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) {
        i++;
      }
    }

    private boolean startsWith(byte[] word) {
      if (b.length - i < word.length) {
        return false;
      }
      for (int k = 0; k < word.length; k++) {
        if (b[i + k] != word[k]) {
          return false;
        }
      }
      return true;
    }

    /** Any JSON value at i; i after it. */
    private boolean value(int depth) {
      if (i >= b.length || depth > MAX_DEPTH) {
        return false;
      }
      byte c = b[i];
      if (c == '"') {
        return string();
      }
      if (c == '{') {
        return object(depth, false);
      }
      if (c == '[') {
        return array(depth);
      }
      if (c == '-' || (c >= '0' && c <= '9')) {
        return number();
      }
      byte[] word = c == 't' ? TRUE : c == 'f' ? FALSE : NULL;
      if (!startsWith(word)) {
        return false;
      }
      i += word.length;
      return true;
    }

    /** An object at i; i after it. The outer one ({@code shape}) writes its members' shape. */
    private boolean object(int depth, boolean shape) {
      i++;
      if (shape) {
        append('{');
      }
      skipSpace();
      int next = at('}') ? 0 : 1;
      if (next == 0) {
        i++;
      }
      while (next == 1) {
        skipSpace();
        int keyStart = i;
        if (!at('"') || !string()) {
          return false;
        }
        int keyEnd = i;
        skipSpace();
        if (!at(':')) {
          return false;
        }
        i++;
        skipSpace();
        boolean isNull = startsWith(NULL);
        if (!value(depth + 1)) {
          return false;
        }
        if (shape) {
          if (len > 1) {
            append(',');
          }
          append(b, keyStart, keyEnd);
          append(':');
          byte[] marker = isNull ? NULL : ONE;
          append(marker, 0, marker.length);
        }
        next = afterElement('}');
      }
      if (shape) {
        append('}');
      }
      return next == 0;
    }

    private boolean array(int depth) {
      i++;
      skipSpace();
      int next = at(']') ? 0 : 1;
      if (next == 0) {
        i++;
      }
      while (next == 1) {
        skipSpace();
        if (!value(depth + 1)) {
          return false;
        }
        next = afterElement(']');
      }
      return next == 0;
    }

    /** After a member or element: 1 at a comma (another follows), 0 at {@code close}, else -1. */
    private int afterElement(char close) {
      skipSpace();
      if (at(',')) {
        i++;
        return 1;
      }
      if (at(close)) {
        i++;
        return 0;
      }
      return -1;
    }

    /** -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
    private boolean number() {
      if (at('-')) {
        i++;
      }
      if (at('0')) {
        i++;
      } else if (digits() == 0) {
        return false;
      }
      if (at('.')) {
        i++;
        if (digits() == 0) {
          return false;
        }
      }
      if (at('e') || at('E')) {
        i++;
        if (at('+') || at('-')) {
          i++;
        }
        return digits() > 0;
      }
      return true;
    }

    private int digits() {
      int start = i;
      while (i < b.length && b[i] >= '0' && b[i] <= '9') {
        i++;
      }
      return i - start;
    }

    /** A string literal at i (its opening quote): escapes and UTF-8 checked; i after it. */
    private boolean string() {
      i++;
      while (i < b.length) {
        int c = b[i] & 0xff;
        if (c == '"') {
          i++;
          return true;
        }
        if (c < 0x20) {
          return false;
        }
        if (c == '\\') {
          if (!escape()) {
            return false;
          }
        } else if (c < 0x80) {
          i++;
        } else if (!utf8(c)) {
          return false;
        }
      }
      return false;
    }

    private boolean escape() {
      if (i + 1 >= b.length) {
        return false;
      }
      byte e = b[i + 1];
      if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
        i += 2;
        return true;
      }
      if (e != 'u' || i + 6 > b.length) {
        return false;
      }
      for (int k = i + 2; k < i + 6; k++) {
        if (Character.digit(b[k], 16) < 0) {
          return false;
        }
      }
      i += 6;
      return true;
    }

    /** One well-formed UTF-8 sequence (no overlong form, surrogate or code point past U+10FFFF). */
    private boolean utf8(int lead) {
      int n;
      int min;
      if (lead >= 0xc2 && lead <= 0xdf) {
        n = 1;
        min = 0x80;
      } else if (lead >= 0xe0 && lead <= 0xef) {
        n = 2;
        min = 0x800;
      } else if (lead >= 0xf0 && lead <= 0xf4) {
        n = 3;
        min = 0x10000;
      } else {
        return false;
      }
      if (i + n >= b.length) {
        return false;
      }
      int cp = lead & (0x3f >> n);
      for (int k = 1; k <= n; k++) {
        int cont = b[i + k] & 0xff;
        if ((cont & 0xc0) != 0x80) {
          return false;
        }
        cp = (cp << 6) | (cont & 0x3f);
      }
      if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return false;
      }
      i += n + 1;
      return true;
    }

    private void append(char c) {
      ensure(1);
      out[len++] = (byte) c;
    }

    private void append(byte[] from, int start, int end) {
      ensure(end - start);
      System.arraycopy(from, start, out, len, end - start);
      len += end - start;
    }

    private void ensure(int n) {
      if (len + n > out.length) {
        out = Arrays.copyOf(out, Math.max(out.length * 2, len + n));
      }
    }
  }
}
