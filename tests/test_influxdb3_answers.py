"""InfluxDB 3's answers on its v1 /query API, as its own tests record them
(tests/fixtures/influxdb3/answers.json: each case names the test it comes from), fed
through jobmon's real reader (InfluxStore) over HTTP, the way 3.x sends them.

How 3.x sends a chunked answer: each chunk is one JSON object, serialized on its own with
nothing after it (influxdata/influxdb core/iox_v1_query_api/src/response/json.rs,
`JsonStream::poll_next`; the newline in that crate's snapshots is added by the tests'
`collect_output`), each in an HTTP chunk of its own. InfluxDB 1.x ends each with a newline.
A reader must take both."""
import http.server
import json
import os
import threading
import urllib.parse

import pytest

from helpers import REPO
from jobmon.stores.influx import InfluxError, InfluxStore

with open(os.path.join(REPO, "tests", "fixtures", "influxdb3", "answers.json"),
          encoding="utf-8") as _f:
    CASES = {c["name"]: c for c in json.load(_f)["cases"]}


class AnswerServer:
    """Answers every /query with one recorded case: its bodies, each an HTTP chunk of its
    own when the request asks for chunks, followed by `after` (3.x: nothing; 1.x: "\\n")."""

    def __init__(self):
        self.case, self.after, self.asked = None, b"", []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                params = dict(urllib.parse.parse_qsl(body.decode()))
                server.asked.append(params)
                bodies = [json.dumps(b, separators=(",", ":")).encode() + server.after
                          for b in server.case["bodies"]]
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if params.get("chunked") == "true":
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for b in bodies:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    data = b"".join(bodies)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def server():
    s = AnswerServer()
    yield s
    s.close()


def read(server, case, after):
    server.case, server.after = CASES[case], after
    store = InfluxStore(server.url, "foo", "Bearer t")
    q = CASES[case]["params"]["q"]
    chunked = CASES[case]["params"].get("chunked") == "true"
    return list(store.streamed(q)) if chunked else store.rows(q)


@pytest.mark.parametrize("after", [b"", b"\n"], ids=["3.x", "1.x"])
@pytest.mark.parametrize("case", [c for c in CASES if "rows" in CASES[c]])
def test_recorded_answer_gives_the_rows_written(server, case, after):
    """Chunk boundaries inside a series (`partial`), one chunk a series, an empty result,
    a tag some points lack (""), whole floats sent as JSON integers: the rows are those the
    recorded test wrote, in its order."""
    assert read(server, case, after) == CASES[case]["rows"]


@pytest.mark.parametrize("after", [b"", b"\n"], ids=["3.x", "1.x"])
def test_a_statement_error_is_reported_not_read_as_no_rows(server, after):
    with pytest.raises(InfluxError, match=CASES["database_not_found"]["error"]):
        read(server, "database_not_found", after)


def test_what_jobmon_asks_is_what_3x_takes(server):
    """The parameters of 3.x's v1 handler (core/iox_v1_query_api/src/handler.rs: `db`,
    `q`, `epoch`, `chunked`, `chunk_size`), and nanosecond epochs: jobmon's reads take
    integer times only."""
    server.asked.clear()
    read(server, "chunked_size_2", b"")
    (asked,) = server.asked
    assert asked["db"] == "foo" and asked["epoch"] == "ns"
    assert asked["chunked"] == "true" and int(asked["chunk_size"]) == InfluxStore.CHUNK_ROWS
