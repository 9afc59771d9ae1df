#!/usr/bin/env python3
"""Authorised HTTP requests while idle peers attack `atvoss-db serve` (slowloris).

Two threads open a connection every 2 ms that sends half a request header and then nothing
(up to 400 open at once, the oldest closed and reopened), while the main thread sends 50
authorised GET /v1/stats, one every 50 ms. Prints the answers by status and the latency.
Before the admission gate (docs/decisions/admission-eviction.md) 64 such peers made every
authorised request a 503.

    /usr/bin/python3 bench/http_slowloris.py build/bin
"""
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

TOKEN = "slowloris-bench-token-0123456789"
PORT = 9393


def attack(stop):
    held = []
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", PORT))
            s.send(b"GET /v1/stats HTTP/1.1\r\nHost: x\r\n")
            held.append(s)
        except OSError:
            pass
        if len(held) > 400:
            for s in held[:200]:
                s.close()
            held = held[200:]
        time.sleep(0.002)
    for s in held:
        s.close()


def main(bin_dir):
    with tempfile.TemporaryDirectory() as tmp:
        db, token = os.path.join(tmp, "bench.db"), os.path.join(tmp, "token")
        subprocess.run([os.path.join(bin_dir, "atvoss-tune"), "--target", "ascend910", "--workload",
                        '{"op":"matmul","dims":{"M":64,"N":64,"K":64}}', "--trials", "2", "--db", db, "--quiet"],
                       check=True, capture_output=True)
        with open(token, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(token, 0o600)
        server = subprocess.Popen([os.path.join(bin_dir, "atvoss-db"), "--db", db, "serve", "--port", str(PORT),
                                   "--token-file", token], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1)
            stop = threading.Event()
            attackers = [threading.Thread(target=attack, args=(stop,)) for _ in range(2)]
            for t in attackers:
                t.start()
            time.sleep(2)
            codes, latency_ms = {}, []
            for _ in range(50):
                start = time.time()
                c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
                try:
                    c.request("GET", "/v1/stats", headers={"Authorization": "Bearer " + TOKEN})
                    r = c.getresponse()
                    r.read()
                    codes[r.status] = codes.get(r.status, 0) + 1
                except Exception as e:  # a reset or a timeout is a result here
                    codes[type(e).__name__] = codes.get(type(e).__name__, 0) + 1
                latency_ms.append((time.time() - start) * 1000)
                time.sleep(0.05)
            stop.set()
            for t in attackers:
                t.join()
        finally:
            server.terminate()
            server.wait()
    latency_ms.sort()
    print(f"authorised answers under attack: {codes}  median {latency_ms[len(latency_ms) // 2]:.1f} ms, "
          f"worst {latency_ms[-1]:.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/bin")
