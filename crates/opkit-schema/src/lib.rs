//! opkit-schema
