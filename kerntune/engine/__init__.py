"""The evaluation engine: inputs, verification, timing, and isolated workers."""
