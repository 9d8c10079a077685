"""InfluxQL as InfluxDB 3 takes it: a parser for the statements 3.x implements, which
refuses what it lacks.

The statements and clauses are those of InfluxQL 1.x (docs.influxdata.com "InfluxQL
reference"); what 3.x refuses comes from its documentation ("InfluxQL feature support":
no SLIMIT, SOFFSET, SHOW SERIES or any cardinality meta-query, SAMPLE() or the technical
analysis functions) and its source (influxdb3_core: `influxdb_influxql_parser` parses no
INTO clause and SHOW only DATABASES, MEASUREMENTS, RETENTION POLICIES, TAG KEYS, TAG
VALUES, FIELD KEYS; `iox_query_influxql` refuses a database or retention policy in FROM,
an ON clause, SLIMIT/SOFFSET, and plans no CREATE, DELETE or DROP).

parse(text) returns the statements' kinds, or raises Refused (what 3.x lacks) or
SyntaxError (what no InfluxQL parses)."""
import re


class Refused(Exception):
    pass


TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<ident>"(?:[^"\\]|\\.)*")
  | (?P<string>'(?:[^'\\]|\\.)*')
  | (?P<duration>\d+(?:ns|u|µ|ms|s|m|h|d|w)\b)
  | (?P<number>\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+|\d+)
  | (?P<op>::|=~|!~|!=|<>|<=|>=|[-+*/%&|^=<>(),.;])
  | (?P<word>[A-Za-z_][A-Za-z_0-9]*)
""", re.X)
REGEX = re.compile(r"/(?:[^/\\\n]|\\.)*/")
LACKING_FUNCTIONS = {"sample", "holt_winters", "holt_winters_with_fit",
                     "chande_momentum_oscillator", "double_exponential_moving_average",
                     "exponential_moving_average", "kaufmans_efficiency_ratio",
                     "kaufmans_adaptive_moving_average", "relative_strength_index",
                     "triple_exponential_moving_average", "triple_exponential_derivative"}
SHOWN = ("DATABASES", "MEASUREMENTS", "RETENTION", "TAG", "FIELD")


def tokens(text):
    out, pos, prev = [], 0, None
    while pos < len(text):
        # a regex literal stands where a value may: after =~, !~, FROM, KEY =~, ",", "("
        if text[pos] == "/" and (prev is None or prev[1] in ("=~", "!~", ",", "(")
                                 or prev[1].upper() in ("FROM", "BY", "MEASUREMENT")):
            m = REGEX.match(text, pos)
            if not m:
                raise SyntaxError(f"unterminated regex at {pos}: {text[pos:pos + 20]!r}")
            prev = ("regex", m.group())
        else:
            m = TOKEN.match(text, pos)
            if not m:
                raise SyntaxError(f"unexpected {text[pos:pos + 20]!r} at {pos}")
            if m.lastgroup == "ws":
                pos = m.end()
                continue
            prev = (m.lastgroup, m.group())
        out.append(prev)
        pos = m.end()
    return out


class Parser:
    def __init__(self, text):
        self.toks, self.i = tokens(text), 0

    # --- tokens
    def peek(self, k=0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else (None, None)

    def word(self, *words, k=0):
        kind, text = self.peek(k)
        return kind == "word" and text.upper() in words

    def take(self, kind=None, text=None):
        k, t = self.peek()
        if (kind and k != kind) or (text and (t or "").upper() != text):
            raise SyntaxError(f"expected {text or kind}, found {t!r} at token {self.i}")
        self.i += 1
        return t

    def accept(self, text):
        if (self.peek()[1] or "").upper() == text:
            self.i += 1
            return True
        return False

    # --- statements
    def statements(self):
        kinds = [self.statement()]
        while self.accept(";"):
            if self.peek()[0] is not None:
                kinds.append(self.statement())
        if self.peek()[0] is not None:
            raise SyntaxError(f"unparsed {self.peek()[1]!r} at token {self.i}")
        return kinds

    def statement(self):
        if self.accept("EXPLAIN"):
            self.accept("ANALYZE")
            self.accept("VERBOSE")
            self.select()
            return "EXPLAIN"
        if self.word("SELECT"):
            self.select()
            return "SELECT"
        if self.accept("SHOW"):
            return self.show()
        raise Refused(f"{self.peek()[1]}: InfluxDB 3 runs SELECT, EXPLAIN and some SHOW "
                      f"statements only")

    def show(self):
        what = (self.peek()[1] or "").upper()
        if what not in SHOWN or self.word("CARDINALITY", "EXACT", k=2):
            rest = " ".join(t for _k, t in self.toks[self.i:self.i + 4])
            raise Refused(f"SHOW {rest}: not in InfluxDB 3 (cardinality and series "
                          f"meta-queries are not supported)")
        self.i += 1
        if what == "DATABASES":
            return "SHOW DATABASES"
        if what == "RETENTION":
            self.take("word", "POLICIES")
            self.on_clause()
            return "SHOW RETENTION POLICIES"
        if what == "MEASUREMENTS":
            self.on_clause()
            if self.accept("WITH"):
                self.take("word", "MEASUREMENT")
                self.take("op")
                self.measurement_name()
            self.where_limit_offset()
            return "SHOW MEASUREMENTS"
        second = self.take("word").upper()          # TAG KEYS|VALUES, FIELD KEYS
        if (what, second) not in (("TAG", "KEYS"), ("TAG", "VALUES"), ("FIELD", "KEYS")):
            raise Refused(f"SHOW {what} {second}: not in InfluxDB 3")
        self.on_clause()
        if self.accept("FROM"):
            self.sources(subqueries=False)
        if second == "VALUES":
            self.take("word", "WITH")
            self.take("word", "KEY")
            if self.accept("IN"):
                self.take("op", "(")
                self.list_of(lambda: self.take("ident"))
                self.take("op", ")")
            else:
                op = self.take("op")
                if op not in ("=", "!=", "<>", "=~", "!~"):
                    raise SyntaxError(f"WITH KEY {op}")
                self.take("regex" if op in ("=~", "!~") else "ident")
        self.where_limit_offset()
        return f"SHOW {what} {second}"

    def on_clause(self):
        if self.word("ON"):
            raise Refused("ON <database>: not in InfluxDB 3 (the database is the request's)")

    def where_limit_offset(self):
        if self.accept("WHERE"):
            self.expr()
        for clause in ("LIMIT", "OFFSET"):
            if self.accept(clause):
                self.take("number")

    def select(self):
        self.take("word", "SELECT")
        self.list_of(self.field)
        if self.word("INTO"):
            raise Refused("SELECT ... INTO: not in InfluxDB 3")
        self.take("word", "FROM")
        self.sources(subqueries=True)
        if self.accept("WHERE"):
            self.expr()
        if self.accept("GROUP"):
            self.take("word", "BY")
            self.list_of(self.dimension)
        if self.accept("FILL"):
            self.take("op", "(")
            if not self.accept("NULL") and not self.accept("NONE") \
                    and not self.accept("PREVIOUS") and not self.accept("LINEAR"):
                self.accept("-")
                self.take("number")
            self.take("op", ")")
        if self.accept("ORDER"):
            self.take("word", "BY")
            self.take("word", "TIME")
            if not self.accept("ASC"):
                self.accept("DESC")
        for clause in ("LIMIT", "OFFSET"):
            if self.accept(clause):
                self.take("number")
        if self.word("SLIMIT") or self.word("SOFFSET"):
            raise Refused(f"{self.peek()[1].upper()}: not in InfluxDB 3")
        if self.accept("TZ"):
            self.take("op", "(")
            self.take("string")
            self.take("op", ")")

    def list_of(self, item):
        item()
        while self.accept(","):
            item()

    def field(self):
        if self.accept("*"):
            return
        self.expr()
        if self.accept("AS"):
            self.identifier()

    def sources(self, subqueries):
        def source():
            if subqueries and self.accept("("):
                self.select()
                self.take("op", ")")
            else:
                self.measurement_name()
        self.list_of(source)

    def measurement_name(self):
        if self.peek()[0] == "regex":
            self.i += 1
            return
        parts = [self.identifier()]
        while self.accept("."):
            parts.append(self.identifier())
        if len(parts) > 1:
            raise Refused(f"FROM {'.'.join(parts)}: InfluxDB 3 takes no database or "
                          f"retention policy in FROM (name the database in the request)")

    def identifier(self):
        kind, text = self.peek()
        if kind not in ("ident", "word"):
            raise SyntaxError(f"expected an identifier, found {text!r}")
        self.i += 1
        return text

    def dimension(self):
        if self.accept("*"):
            return
        if self.peek()[0] == "regex":
            self.i += 1
            return
        if self.word("TIME") and self.peek(1)[1] == "(":
            self.i += 2
            self.take("duration")
            if self.accept(","):
                self.accept("-")
                self.take("duration")
            self.take("op", ")")
            return
        self.var_ref()

    # --- expressions: precedence climbing over InfluxQL's binary operators
    BINARY = [("OR",), ("AND",), ("=", "!=", "<>", "<", "<=", ">", ">=", "=~", "!~"),
              ("+", "-", "|", "^"), ("*", "/", "%", "&")]

    def expr(self, level=0):
        if level == len(self.BINARY):
            return self.unary()
        self.expr(level + 1)
        while (self.peek()[1] or "").upper() in self.BINARY[level]:
            op = self.peek()[1]
            self.i += 1
            if op in ("=~", "!~"):
                self.take("regex")
            else:
                self.expr(level + 1)

    def unary(self):
        if self.accept("-") or self.accept("+"):
            return self.unary()
        kind, text = self.peek()
        if text == "(":
            self.i += 1
            self.expr()
            self.take("op", ")")
        elif kind in ("number", "duration", "string", "regex"):
            self.i += 1
        elif kind == "word" and text.upper() in ("TRUE", "FALSE"):
            self.i += 1
        elif kind == "word" and self.peek(1)[1] == "(":
            self.call()
        elif kind in ("ident", "word"):
            self.var_ref()
        else:
            raise SyntaxError(f"expected an expression, found {text!r} at token {self.i}")

    def call(self):
        name = self.take("word").lower()
        if name in LACKING_FUNCTIONS:
            raise Refused(f"{name.upper()}(): not in InfluxDB 3")
        self.take("op", "(")
        if not self.accept(")"):
            self.list_of(lambda: self.accept("*") or self.expr())
            self.take("op", ")")

    def var_ref(self):
        self.identifier()
        if self.accept("::"):
            if self.take("word").lower() not in ("tag", "field", "float", "integer",
                                                 "string", "boolean", "unsigned"):
                raise SyntaxError("unknown type cast")


def parse(text):
    return Parser(text).statements()
