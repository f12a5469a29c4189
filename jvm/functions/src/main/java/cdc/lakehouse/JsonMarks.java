package cdc.lakehouse;

import java.util.Arrays;

import org.apache.spark.unsafe.types.UTF8String;

/**
 * The exact-JSON marking of macros/utils/cdc_json.sql as one pass over the UTF-8 bytes.
 *
 * <p>Spark's JSON reader turns numbers into doubles, so the project rewrites every bare number
 * and boolean of a message into the marked string {@code "\u0000<token>"} before parsing, and
 * back when an image is written out. In SQL that takes regular expressions, which cost more
 * than all the JSON parsing of a message. These two functions give the text of those regular
 * expressions (macros cdc_mark_json and cdc_unmark_json; tests/python/test_jvm_functions.py
 * compares both) several times faster. Every byte that matters is ASCII, so the scan works on
 * the UTF-8 bytes and never decodes.
 */
public final class JsonMarks {
  private static final byte[] MARK = {'"', '\\', 'u', '0', '0', '0', '0'};
  private static final byte[] TRUE = {'t', 'r', 'u', 'e'};
  private static final byte[] FALSE = {'f', 'a', 'l', 's', 'e'};

  private JsonMarks() {}

  /**
   * The rewritten text: the input's bytes up to each change, then the change. Allocated at the
   * first change, so that text needing none is returned as it is.
   */
  private static final class Out {
    final byte[] src;
    private final UTF8String text;
    private byte[] buf;
    private int len;
    private int copied;

    private Out(UTF8String text) {
      this.text = text;
      this.src = text.getBytes();
    }

    /** The output of {@code text}, or null for a null text (SQL null in, null out). */
    static Out of(UTF8String text) {
      return text == null ? null : new Out(text);
    }

    /** Copies the input not yet copied, up to {@code at}. */
    void keepUpTo(int at) {
      append(src, copied, at);
      copied = at;
    }

    /** Leaves the input up to {@code at} out (it has been replaced). */
    void skipTo(int at) {
      copied = at;
    }

    void append(byte[] from, int start, int to) {
      int n = to - start;
      if (buf == null) {
        buf = new byte[src.length + src.length / 4 + 16];
      }
      if (len + n > buf.length) {
        buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
      }
      System.arraycopy(from, start, buf, len, n);
      len += n;
    }

    UTF8String finish() {
      if (buf == null) {
        return text;
      }
      keepUpTo(src.length);
      return UTF8String.fromBytes(buf, 0, len);
    }
  }

  private static boolean isDigit(byte b) {
    return b >= '0' && b <= '9';
  }

  private static boolean isNumberChar(byte b) {
    return isDigit(b) || b == '.' || b == 'e' || b == 'E' || b == '+' || b == '-';
  }

  private static boolean startsWith(byte[] b, int at, int end, byte[] word) {
    if (end - at < word.length) {
      return false;
    }
    for (int k = 0; k < word.length; k++) {
      if (b[at + k] != word[k]) {
        return false;
      }
    }
    return true;
  }

  /**
   * End (exclusive) of the bare token at {@code at}, as the regex group
   * {@code (-?[0-9][0-9.eE+-]*+|true|false)}; -1 when none starts there.
   */
  private static int tokenEnd(byte[] b, int at, int end) {
    int k = at;
    if (k < end && b[k] == '-') {
      k++;
    }
    if (k < end && isDigit(b[k])) {
      k++;
      while (k < end && isNumberChar(b[k])) {
        k++;
      }
      return k;
    }
    if (startsWith(b, at, end, TRUE)) {
      return at + TRUE.length;
    }
    if (startsWith(b, at, end, FALSE)) {
      return at + FALSE.length;
    }
    return -1;
  }

  /**
   * Index of the quote closing the string literal that opens at {@code at}; -1 when it does not
   * close. As the regex {@code "[^"\\]*+(?:\\.[^"\\]*+)*+"}: the character after a backslash
   * may be anything but a line terminator ({@code .} of java.util.regex: \n, \r, U+0085,
   * U+2028, U+2029).
   */
  private static int stringEnd(byte[] b, int at, int end) {
    int k = at + 1;
    while (k < end) {
      byte c = b[k];
      if (c == '"') {
        return k;
      }
      if (c != '\\') {
        k++;
        continue;
      }
      if (k + 1 >= end) {
        return -1;
      }
      int n = b[k + 1] & 0xff;
      boolean nel = n == 0xc2 && k + 2 < end && (b[k + 2] & 0xff) == 0x85;
      boolean separator = n == 0xe2 && k + 3 < end && (b[k + 2] & 0xff) == 0x80
          && ((b[k + 3] & 0xff) == 0xa8 || (b[k + 3] & 0xff) == 0xa9);
      if (n == '\n' || n == '\r' || nel || separator) {
        return -1;
      }
      k += 2;
    }
    return -1;
  }

  /**
   * JSON text to the same text with every bare number and boolean (outside string literals) as
   * the marked string {@code "\u0000<token>"}.
   */
  public static UTF8String mark(UTF8String text) {
    Out out = Out.of(text);
    if (out == null) {
      return null;
    }
    byte[] b = out.src;
    int i = 0;
    while (i < b.length) {
      byte c = b[i];
      if (c == '"') {
        int close = stringEnd(b, i, b.length);
        i = close >= 0 ? close + 1 : i + 1;
        continue;
      }
      int tokenEnd = c == '-' || isDigit(c) || c == 't' || c == 'f' ? tokenEnd(b, i, b.length) : -1;
      if (tokenEnd < 0) {
        i++;
        continue;
      }
      out.keepUpTo(i);
      out.append(MARK, 0, MARK.length);
      out.append(b, i, tokenEnd);
      out.append(MARK, 0, 1);
      out.skipTo(tokenEnd);
      i = tokenEnd;
    }
    return out.finish();
  }

  /**
   * Marked JSON text back to the original: every marked number or boolean unquoted, as the
   * regex {@code "\\u0000(-?[0-9][0-9.eE+-]*+|true|false)"} replaced by its group.
   */
  public static UTF8String unmark(UTF8String text) {
    Out out = Out.of(text);
    if (out == null) {
      return null;
    }
    byte[] b = out.src;
    for (int i = 0; i < b.length; i++) {
      if (b[i] != '"' || !startsWith(b, i, b.length, MARK)) {
        continue;
      }
      int start = i + MARK.length;
      int tokenEnd = tokenEnd(b, start, b.length);
      if (tokenEnd >= 0 && tokenEnd < b.length && b[tokenEnd] == '"') {
        out.keepUpTo(i);
        out.append(b, start, tokenEnd);
        out.skipTo(tokenEnd + 1);
        i = tokenEnd;
      }
    }
    return out.finish();
  }
}
