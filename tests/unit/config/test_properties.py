"""java.util.Properties.load fidelity of kafkapy.config.properties."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from kafkapy import java_properties
from kafkapy.config import ConfigError, load_properties, parse_override, parse_properties

TRICKY = (
    "# comment\n"
    "! bang comment \\\n"
    "not.continued=yes\n"
    "   \n"
    "  lead.ws = value with trailing space  \n"
    "colon:sep\n"
    "space sep\n"
    "tab\tsep\n"
    "both = : value\n"
    "eq==x\n"
    "esc\\=key=v\n"
    "esc\\ key=v2\n"
    "cont=first \\\n"
    "     second\\\n"
    "\t#notcomment\n"
    "even=ends\\\\\n"
    "odd=ends\\\\\\\n"
    "  tail\n"
    "escapes=\\t\\n\\r\\f\\\\\\#\\!\\a\\u0041\\u00e9\n"
    "empty=\n"
    "keyonly\n"
    "dup=1\n"
    "dup=2\n"
    "crlf=a\\\r\n"
    "  b\r\n"
    "cr=x\rlast=\\\n"
    "\n"
    "after.blank=1\n"
    "eof=z\\"
)


def test_tricky_text_matches_expected():
    p = parse_properties(TRICKY)
    assert "not.continued" in p and p["not.continued"] == "yes"
    assert p["lead.ws"] == "value with trailing space  "
    assert p["colon"] == "sep" and p["space"] == "sep" and p["tab"] == "sep"
    assert p["both"] == ": value"
    assert p["eq"] == "=x"
    assert p["esc=key"] == "v" and p["esc key"] == "v2"
    assert p["cont"] == "first second#notcomment"
    assert p["even"] == "ends\\"
    assert p["odd"] == "ends\\tail"
    assert p["escapes"] == "\t\n\r\f\\#!aA\u00e9"
    assert p["empty"] == "" and p["keyonly"] == ""
    assert p["dup"] == "2"
    assert p["crlf"] == "ab"
    assert p["cr"] == "x" and p["last"] == ""
    assert p["after.blank"] == "1"
    assert p["eof"] == "z"


@pytest.mark.parametrize("text", ["k=\\u12", "k=\\u12G4", "k\\uzzzz=v"])
def test_malformed_unicode_escape(text):
    with pytest.raises(ConfigError, match="Malformed"):
        parse_properties(text)


def test_load_reads_iso_8859_1(tmp_path):
    f = tmp_path / "s.properties"
    f.write_bytes("k=\u00e9\n".encode("utf-8"))
    assert load_properties(f) == {"k": "\u00c3\u00a9"}  # what Kafka sees, too


@pytest.mark.parametrize("arg,expected", [
    ("a=b", ("a", "b")), ("a=b=c", ("a", "b=c")), ("a=", ("a", "")), ("a", ("a", "")),
    (" a = b", (" a ", " b")),
])
def test_parse_override(arg, expected):
    assert parse_override(arg) == expected


def test_parse_override_rejects_empty_key():
    with pytest.raises(ConfigError):
        parse_override("=x")


_JAVA = r"""
import java.io.*; import java.util.*;
public class LoadProps {
  public static void main(String[] a) throws Exception {
    Properties p = new Properties();
    try (InputStream in = new FileInputStream(a[0])) { p.load(in); }
    StringBuilder sb = new StringBuilder("{");
    boolean first = true;
    for (String k : new TreeSet<>(p.stringPropertyNames())) {
      if (!first) sb.append(","); first = false;
      sb.append(q(k)).append(":").append(q(p.getProperty(k)));
    }
    System.out.print(sb.append("}"));
  }
  static String q(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append("\"").toString();
  }
}
"""


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK")
def test_same_result_as_java(tmp_path):
    src = tmp_path / "LoadProps.java"
    src.write_text(_JAVA)
    props = tmp_path / "tricky.properties"
    props.write_bytes((TRICKY + "\nlatin=caf\u00e9\n").encode("iso-8859-1"))
    out = subprocess.run(["java", str(src), str(props)], capture_output=True, text=True, timeout=120, check=True)
    assert load_properties(props) == json.loads(out.stdout)


def test_dumps_reads_back_as_written():
    props = {"a key": "=v", "#k": " lead", "uni": "\u20ac\U0001F600", "tab\t": "x\\y\n"}
    text = java_properties.dumps(props, "made by a test")
    assert text.startswith("# made by a test\n")
    assert parse_properties(text) == props
