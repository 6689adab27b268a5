"""Shared helpers of the reliability tests (pytest loads this file before the test modules)."""
import os

import psycopg

DEVICE = os.environ.get("GPU2BS_TEST_DEVICE", "auto")


def connect():
    """An autocommit connection to the test cluster with gpu2bs.device from GPU2BS_TEST_DEVICE."""
    conn = psycopg.connect(autocommit=True)
    conn.execute(f"SET gpu2bs.device = {DEVICE}")
    return conn
