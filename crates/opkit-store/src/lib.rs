//! opkit-store
