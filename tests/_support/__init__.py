"""What the test modules share: config builders, stand-in trials, fixtures' helpers and the one
wait. Nothing here is a test; a test module imports from here, never from another test module,
and waits with :func:`tests._support.waiting.wait_until` (tests/test_test_layout.py checks both).
"""
