//! opkit-protobuf
