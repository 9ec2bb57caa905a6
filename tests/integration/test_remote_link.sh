#!/usr/bin/env bash
# test_remote.sh again, every SSH connection through the link emulator (bench/linkproxy.py: 12.5 ms
# each way, 100 Mbit/s; issue 15): its faults hold over a slow link as on loopback.
export MLW_TEST_VIA_LINK=1
exec bash "$(dirname "$0")/test_remote.sh"
