"""Being written."""
import streamlit as st


def render() -> None:
    st.title("charts")
